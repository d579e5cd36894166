"""serving/probes.py: the kubelet's probes on the metrics port, against the served process over TCP
and a real PostgreSQL. Readiness says whether this pod can serve, never whether the shared pool is
busy; neither probe waits behind the traffic port's connection cap."""

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import httpx
from devdb import free_port

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.app import APPLICATION_NAME
from {{ cookiecutter.package_name }}.serving.metrics_listener import metrics_listener
from {{ cookiecutter.package_name }}.serving.probes import Probes
from {{ cookiecutter.package_name }}.serving.protocol import guarded_protocol
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, serve, serve_process
from ..declared import first_resource

POOL = 2  # POOL_MAX_SIZE of the servers under test
CAP = 4  # LIMIT_CONCURRENCY of the server under test


@asynccontextmanager
async def _table_locked(database_url: str) -> AsyncIterator[None]:
    """The first resource's table locked against every reader until the block ends: a slow table."""
    connection = await asyncpg.connect(database_url, statement_cache_size=0)
    try:
        async with connection.transaction():
            await connection.execute(
                f"LOCK TABLE {first_resource().table} IN ACCESS EXCLUSIVE MODE"
            )
            yield
    finally:
        await connection.close()


async def _waiting_on_the_lock(database_url: str, count: int) -> None:
    """Return once `count` of the service's pooled connections wait on a lock (polled: PostgreSQL
    offers no event for it)."""
    connection = await asyncpg.connect(database_url, statement_cache_size=0)
    try:
        for _ in range(500):
            waiting = await connection.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = $1 AND wait_event_type = 'Lock'",
                APPLICATION_NAME,
            )
            if waiting >= count:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"{waiting} of {count} pooled connections reached the lock")
    finally:
        await connection.close()


def _env(database_url: str, auth_env: dict[str, str], metrics_port: int) -> dict[str, str]:
    return {
        **auth_env,
        "DATABASE_URL": database_url,
        "METRICS_PORT": str(metrics_port),
        "POOL_MIN_SIZE": str(POOL),
        "POOL_MAX_SIZE": str(POOL),
    }


async def test_readiness_answers_200_while_a_slow_table_holds_every_pooled_connection(
    database_url: str, auth_env: dict[str, str], auth_headers: dict[str, str], tmp_path: Path
) -> None:
    metrics_port = free_port()
    with serve(tmp_path / "server.log", **_env(database_url, auth_env, metrics_port)) as base:
        async with (
            httpx.AsyncClient(base_url=base, headers=auth_headers, timeout=30) as http,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{metrics_port}", timeout=5) as kubelet,
        ):
            async with _table_locked(database_url):
                slow = [asyncio.create_task(http.get(f"{BASE}/1")) for _ in range(POOL)]
                await _waiting_on_the_lock(database_url, POOL)
                # Every pooled connection is held by the slow table: a request that needs one
                # waits, while the probes ask the database on a connection of their own.
                probed = await kubelet.get("/readyz")
                on_traffic_port = await http.get("/readyz")
                alive = await kubelet.get("/healthz")
            answers = await asyncio.gather(*slow)
    assert probed.status_code == 200, probed.text
    assert on_traffic_port.status_code == 200, on_traffic_port.text
    assert alive.status_code == 200
    # The slow requests held their connections until the lock went (then 404: no such row).
    assert {answer.status_code for answer in answers} <= {200, 404}


async def test_probes_answer_on_the_metrics_port_while_the_traffic_port_is_at_its_cap(
    database_url: str, auth_env: dict[str, str], tmp_path: Path
) -> None:
    metrics_port = free_port()
    env = {**_env(database_url, auth_env, metrics_port), "LIMIT_CONCURRENCY": str(CAP)}
    with serve(tmp_path / "server.log", **env) as base:
        port = int(base.rsplit(":", 1)[1])
        # Silent sockets, as a reconnect storm leaves them: each counts in LIMIT_CONCURRENCY.
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(CAP)]
        try:
            async with (
                httpx.AsyncClient(base_url=base, timeout=5) as client,
                httpx.AsyncClient(
                    base_url=f"http://127.0.0.1:{metrics_port}", timeout=5
                ) as kubelet,
            ):
                refused = await client.get("/healthz")
                alive, ready = await kubelet.get("/healthz"), await kubelet.get("/readyz")
        finally:
            for _, writer in held:
                writer.close()
    assert refused.status_code == 503  # the cap is reached: traffic is refused
    assert alive.status_code == 200
    assert ready.status_code == 200, ready.text


async def _reopened_with_half_a_head(port: int, opened: asyncio.Event) -> None:
    """A connection that sends half a request head and waits; opened again once it is closed."""
    while True:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        opened.set()
        try:
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: test\r\nX-Slow: ")
            await reader.read()  # until the listener closes it
        except ConnectionResetError:
            pass  # closed on unread bytes: a reset, and the next one opens
        finally:
            writer.close()


async def test_probes_answer_while_a_client_reopens_connections_with_half_a_head(
    database_url: str, auth_env: dict[str, str], tmp_path: Path
) -> None:
    """Anything in the cluster reaches the metrics port (the NetworkPolicy is opt-in): a client
    re-opening a few dozen connections that never finish a head must not fail the kubelet's
    probes, or liveness restarts the pod."""
    metrics_port = free_port()
    with serve(tmp_path / "server.log", **_env(database_url, auth_env, metrics_port)):
        opened = [asyncio.Event() for _ in range(64)]
        holding = [
            asyncio.create_task(_reopened_with_half_a_head(metrics_port, event)) for event in opened
        ]
        try:
            await asyncio.gather(*(event.wait() for event in opened))
            answers: list[int | str] = []
            for path in ["/healthz", "/readyz"] * 10:
                # A new connection for each probe, as the kubelet's; its timeout, the chart's.
                async with httpx.AsyncClient(timeout=2) as kubelet:
                    try:
                        response = await kubelet.get(f"http://127.0.0.1:{metrics_port}{path}")
                        answers.append(response.status_code)
                    except httpx.HTTPError as error:
                        answers.append(type(error).__name__)
            assert all(not task.done() for task in holding)  # they kept at it all along
        finally:
            for task in holding:
                task.cancel()
            await asyncio.gather(*holding, return_exceptions=True)
    assert answers == [200] * 20


async def test_readiness_answers_503_while_the_server_drains_and_liveness_still_200(
    database_url: str, auth_env: dict[str, str], auth_headers: dict[str, str], tmp_path: Path
) -> None:
    metrics_port = free_port()
    env = _env(database_url, auth_env, metrics_port)
    with serve_process(tmp_path / "server.log", **env) as (base, process):
        async with (
            httpx.AsyncClient(base_url=base, headers=auth_headers, timeout=30) as http,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{metrics_port}", timeout=5) as kubelet,
        ):
            assert (await kubelet.get("/readyz")).status_code == 200
            async with _table_locked(database_url):
                in_flight = asyncio.create_task(http.get(f"{BASE}/1"))
                await _waiting_on_the_lock(database_url, 1)
                process.send_signal(signal.SIGTERM)  # the drain waits for the request in flight
                ready = await _until_status(kubelet, "/readyz", 503)
                alive = await kubelet.get("/healthz")
            answer = await in_flight
        process.wait(timeout=30)
    assert "draining" in ready.json()["detail"]
    assert alive.status_code == 200
    assert answer.status_code in (200, 404)  # drained, not cut


async def _until_status(client: httpx.AsyncClient, path: str, status: int) -> httpx.Response:
    """GET `path` until it answers `status` (the signal is handled on the server's loop, a moment
    after it is sent: there is no event to wait on)."""
    for _ in range(250):
        response = await client.get(path)
        if response.status_code == status:
            return response
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never answered {status}: {response.status_code} {response.text}")


async def test_probes_answer_503_until_the_server_has_started() -> None:
    """Before the lifespan gives them the database, and before the server is up, neither probe
    says yes: the startup probe keeps the kubelet's other probes waiting."""
    port = free_port()
    protocol = guarded_protocol(Settings(app_env="dev"))
    probes = Probes()
    async with (
        metrics_listener(Metrics(), "127.0.0.1", port, protocol=protocol, routes=probes.routes()),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as kubelet,
    ):
        alive, ready = await kubelet.get("/healthz"), await kubelet.get("/readyz")
    assert (alive.status_code, ready.status_code) == (503, 503)
    assert ready.json()["detail"] == "The server is starting."
