"""The service under test: started here (pinned to core 0) or found at --url; and its seed data."""

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import asyncpg
import orjson
import psutil

from . import project

SERVER_CORE = 0


@dataclass(frozen=True)
class Target:
    url: str
    pid: int | None  # the server's process, for CPU sampling; None when it cannot be found
    pinned: str  # the cores the server runs on, as the report states it


def cores() -> list[int]:
    """The cores this process may run on (`make loadtest` already keeps it off core 0)."""
    return sorted(os.sched_getaffinity(0))


def can_pin() -> bool:
    return (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None


def keep_client_off_server_core() -> list[int]:
    """Move this process (and the client processes it spawns later) off the server's core."""
    others = [core for core in cores() if core != SERVER_CORE] or [
        core for core in range(os.cpu_count() or 1) if core != SERVER_CORE
    ]
    os.sched_setaffinity(0, others)
    return others


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_healthy(
    url: str, process: subprocess.Popen[bytes] | None, timeout: float = 30
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with (
            contextlib.suppress(OSError, urllib.error.URLError),
            urllib.request.urlopen(f"{url}/healthz", timeout=1) as response,  # noqa: S310
        ):
            if response.status == 200:
                return
        if (process is not None and process.poll() is not None) or time.monotonic() > deadline:
            raise RuntimeError(f"the service at {url} did not become healthy")
        time.sleep(0.05)  # polling a process that is starting: there is no event to wait on


@contextlib.contextmanager
def started(database_url: str, *, max_concurrency: int, pin: bool) -> Iterator[Target]:
    """`python -m <package>`: one worker, pinned to core 0 when the machine has two cores or more.

    The service's admission limits (connections and requests in flight) are raised above the
    sweep so that the sweep and the search measure the service, not the limits; the capacity
    report then says where to set MAX_IN_FLIGHT.
    """
    port = _free_port()
    command = [sys.executable, "-m", project.PACKAGE]
    pinned = "unpinned"
    if pin and can_pin():
        command = ["taskset", "-c", str(SERVER_CORE), *command]
        pinned = f"core {SERVER_CORE}"
    source = str(project.ROOT / "src")
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "LOG_LEVEL": "warning",
        "METRICS_PORT": "0",  # nothing scrapes during a load test
        "LIMIT_CONCURRENCY": str(max(1000, 4 * max_concurrency)),
        "MAX_IN_FLIGHT": str(max(1000, 4 * max_concurrency)),
        "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")])),
    }
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process)
        yield Target(url, process.pid, pinned)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def running(url: str) -> Target:
    """A service someone else started; its process is found by its listening port when local."""
    wait_until_healthy(url, None, timeout=5)
    parts = urlsplit(url)
    pid = None
    if parts.hostname in {"127.0.0.1", "localhost"}:
        with contextlib.suppress(psutil.Error):
            for connection in psutil.net_connections(kind="tcp"):
                address = connection.laddr
                if (
                    connection.status == psutil.CONN_LISTEN
                    and getattr(address, "port", None) == parts.port
                ):
                    pid = connection.pid
                    break
    return Target(url.rstrip("/"), pid, "unknown (started elsewhere)")


async def _seed(database_url: str, rows: int) -> list[int]:
    connection = await asyncpg.connect(database_url)
    try:
        missing = rows - await connection.fetchval(project.COUNT_ROWS)
        if missing > 0:
            await connection.execute(project.SEED_ROWS, missing)
            await connection.execute(project.ANALYZE)
        return [record["id"] for record in await connection.fetch(project.SEEDED_IDS, rows)]
    finally:
        await connection.close()


def seed(database_url: str, rows: int) -> list[int]:
    """Make the table hold at least `rows` rows (idempotent) and return the first `rows` ids."""
    return asyncio.run(_seed(database_url, rows))


def seed_over_http(url: str, rows: int) -> list[int]:
    """Without database access: the ids the API lists, creating rows through it when too few."""
    ids: list[int] = []
    after = 0
    while len(ids) < rows:
        with urllib.request.urlopen(f"{url}{project.PREFIX}?limit=500&after={after}") as page:  # noqa: S310
            body = page.read()
        data = orjson.loads(body)
        ids += [row["id"] for row in data["data"]]
        if data["next_after"] is None:
            break
        after = data["next_after"]
    while len(ids) < min(rows, 1000):
        request = urllib.request.Request(  # noqa: S310
            f"{url}{project.PREFIX}",
            data=b'{"name": "seeded by the load test", "price_cents": 100}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request) as response:  # noqa: S310
            ids.append(orjson.loads(response.read())["id"])
    return ids[:rows]
