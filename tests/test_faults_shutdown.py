"""SIGTERM to the real server process of a baked service under write load: in-flight requests
complete, new connections are refused, no acknowledged write is lost and the pool is closed.
Recorded in docs/reliability.md."""

import asyncio
import signal
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from . import faults
from .figures import Figures
from .serving import Served, fetch

pytestmark = [pytest.mark.slow, pytest.mark.serial]


def test_sigterm_under_write_load_completes_in_flight_requests_and_loses_no_acknowledged_write(
    serve: Callable[..., Served], stoppable_postgres: faults.Postgres, figures: Figures
) -> None:
    grace = 10.0
    served = serve(
        TIMEOUT_GRACEFUL_SHUTDOWN=str(int(grace)), STATEMENT_TIMEOUT_MS="20000", LOG_LEVEL="info"
    )
    acknowledged: dict[str, int] = {}
    sent: Counter[int] = Counter()

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            held = await faults.create_item(http, "in flight at shutdown")
            load, stop = faults.Load(), asyncio.Event()

            async def write(client: httpx.AsyncClient, began: float, worker: int) -> faults.Outcome:
                sent[worker] += 1
                number = sent[worker]
                name = f"shutdown-{worker}-{number}"
                body = {
                    "name": name,
                    "price_cents": worker * 1_000_000 + number,
                    "quantity": number,
                }
                outcome = await faults.timed(client, "POST", faults.ITEMS, began, json=body)
                if outcome.status == 201:
                    acknowledged[name] = number
                return outcome

            async with faults.row_locked(stoppable_postgres.url, held):
                traffic = asyncio.ensure_future(
                    faults.steady_load(served.url, write, stop, 8, load, stop_on_refusal=True)
                )
                in_flight = asyncio.ensure_future(
                    http.patch(f"{faults.ITEMS}/{held}", json={"quantity": 7})
                )
                await faults.wait_for(
                    lambda: faults.waiting_on_a_lock(stoppable_postgres.url, 1), within=10
                )
                await asyncio.sleep(1.5)  # steady writes before the signal
                served.process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                refused_after = await faults.wait_for(lambda: _refused(served.port), within=3)
                assert served.process.poll() is None, "exited before its in-flight request finished"
                assert not in_flight.done()
                await asyncio.sleep(1.0)  # the in-flight request is still waiting on the lock
            finished = await in_flight  # the lock is released: it may now complete
            await asyncio.to_thread(served.process.wait, grace + 5)
            exited = time.monotonic() - signalled
            stop.set()
            await traffic

        names = [f"shutdown-{w}-{n}" for w in sent for n in range(1, sent[w] + 1)]
        rows = await fetch(
            stoppable_postgres.url,
            "SELECT name, price_cents, quantity FROM items WHERE name = ANY($1::text[])",
            names,
        )
        connections = await fetch(
            stoppable_postgres.url,
            "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1",
            faults.APPLICATION_NAME,
        )
        held_row = await fetch(
            stoppable_postgres.url, "SELECT quantity, version FROM items WHERE id = $1", held
        )
        return {
            "load": load, "finished": finished, "exited": exited, "refused_after": refused_after,
            "rows": rows, "connections": int(connections[0]["n"]), "held_row": held_row[0],
        }  # fmt: skip

    result = asyncio.run(scenario())
    load: faults.Load = result["load"]
    found = {row["name"]: row for row in result["rows"]}
    unanswered = [o for o in load.outcomes if o.status is None and o.error != "ConnectError"]
    assert result["finished"].status_code == 200  # in flight at SIGTERM, completed
    assert (result["held_row"]["quantity"], result["held_row"]["version"]) == (7, 2)
    # uvicorn re-raises the captured SIGTERM once shutdown is complete, so -15 is a clean exit.
    assert served.process.returncode in (0, -signal.SIGTERM), served.output()[-3000:]
    assert result["exited"] < grace
    assert result["connections"] == 0, "the pool was not closed"
    assert "pool_closed" in served.output()
    assert acknowledged, "no write was acknowledged: the test proved nothing"
    missing = [name for name in acknowledged if name not in found]
    assert missing == []
    for name, row in found.items():  # every stored row is whole: all its fields from one request
        worker, number = (int(part) for part in name.split("-")[1:])
        assert (row["price_cents"], row["quantity"]) == (worker * 1_000_000 + number, number)
    # A row found but never acknowledged can only be a request whose answer the client lost.
    assert len(found) - len(acknowledged) <= len(unanswered)
    assert {o.status for o in load.outcomes if o.status is not None} == {201}
    figures.record(
        "graceful_shutdown",
        writes_sent=len(load.outcomes),
        by_status=dict(load.statuses()),
        acknowledged_writes=len(acknowledged),
        rows_found=len(found),
        acknowledged_but_missing=len(missing),
        in_flight_request_status=result["finished"].status_code,
        new_connections_refused_after_s=round(result["refused_after"], 2),
        exit_after_sigterm_s=round(result["exited"], 2),
        grace_period_s=grace,
        exit_code=served.process.returncode,
        connections_left_open=result["connections"],
    )


async def _refused(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        return True
    writer.close()
    return False
