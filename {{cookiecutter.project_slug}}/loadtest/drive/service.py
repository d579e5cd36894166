"""The service under test: started here (pinned to core 0) or found at --url; and its seed data."""

import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import orjson
import psutil
from devdb import free_port

from .. import project
from ..plan import (
    BY_NAME,
    ENVIRONMENT,
    OPERATIONS,
    RANDOM_BELOW,
    UNIQUE_RANGE,
    HeadersError,
    parts,
    render,
    seed_rows,
)

SERVER_CORE = 0


@dataclass(frozen=True)
class Target:
    url: str
    pid: int | None  # the server's process, for CPU sampling; None when it cannot be found
    pinned: str  # the cores the server runs on, as the report states it
    metrics_url: str | None = None  # its METRICS_PORT listener, read between steps (evidence.py)


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
def started(
    database_url: str,
    *,
    max_concurrency: int,
    pin: bool,
    settings: Mapping[str, str],
    source: Path = project.ROOT / "src",
    wrapper: Sequence[str] = (),
) -> Iterator[Target]:
    """`python -m <package>` from `source` (the regression gate serves another revision's src/):
    one worker, pinned to core 0 when the machine has two cores or more, with `settings` over the
    environment's (loadtest/drive/credentials.py: the ones its auth needs). `wrapper` is a command
    that starts the server as its own child (`make profile`'s py-spy): the Target is that child.

    The service's admission limits (connections and requests in flight) are raised above the
    sweep so that the sweep and the search measure the service, not the limits; the capacity
    report then says where to set MAX_IN_FLIGHT.
    """
    port, metrics_port = free_port(), free_port()
    while metrics_port == port:
        metrics_port = free_port()
    command = [sys.executable, "-m", project.PACKAGE]
    pinned = "unpinned"
    if pin and can_pin():
        command = ["taskset", "-c", str(SERVER_CORE), *command]
        pinned = f"core {SERVER_CORE}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "LOG_LEVEL": "warning",
        # Scraped before and after each trial of the rate search only (loadtest/drive/evidence.py).
        "METRICS_PORT": str(metrics_port),
        "LIMIT_CONCURRENCY": str(max(1000, 4 * max_concurrency)),
        "MAX_IN_FLIGHT": str(max(1000, 4 * max_concurrency)),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")])),
        **settings,
    }
    process = subprocess.Popen([*wrapper, *command], env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    server: psutil.Process | None = None
    try:
        # Under a wrapper (a sampling profiler) the start-up is slower: imports are sampled too.
        wait_until_healthy(url, process, timeout=180 if wrapper else 30)
        # taskset execs the server: the wrapper's one child is the server itself.
        server = psutil.Process(process.pid).children()[0] if wrapper else None
        pid = server.pid if server is not None else process.pid
        yield Target(url, pid, pinned, f"http://127.0.0.1:{metrics_port}")
    finally:
        # The wrapper finishes its work (py-spy writes its recording) when its child has exited.
        with contextlib.suppress(psutil.Error):
            (server or process).terminate()
        try:
            process.wait(timeout=60)
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


async def _seed_table(connection: asyncpg.Connection, resource: str, rows: int) -> list[int]:
    table = BY_NAME[resource].table  # a name of the declaration, not of a request
    count: int = await connection.fetchval(f"SELECT count(*) FROM {table}")  # noqa: S608
    if count < rows:
        await connection.execute(seed_rows(BY_NAME[resource]), count + 1, rows)
        await connection.execute(f"ANALYZE {table}")
    found = await connection.fetch(f"SELECT id FROM {table} ORDER BY id LIMIT $1", rows)  # noqa: S608
    return [record["id"] for record in found]


async def _seed(database_url: str, rows: int, resources: list[str]) -> dict[str, list[int]]:
    connection = await asyncpg.connect(database_url)
    try:
        return {resource: await _seed_table(connection, resource, rows) for resource in resources}
    finally:
        await connection.close()


def seed(database_url: str, rows: int, resources: list[str]) -> dict[str, list[int]]:
    """Make each resource's table hold at least `rows` rows (idempotent: one statement a table,
    numbering its rows from the table's count + 1, loadtest/plan/declared.py) and return the first
    `rows` ids of each, by plural."""
    return asyncio.run(_seed(database_url, rows, resources))


async def _settle(database_url: str, resources: list[str]) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        for resource in resources:
            await connection.execute(f"VACUUM (ANALYZE) {BY_NAME[resource].table}")
        with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
            await connection.execute("CHECKPOINT")
    finally:
        await connection.close()


def settle(database_url: str, resources: list[str]) -> None:
    """Leave no database work of the scenario before to the next: vacuum and analyze the tables
    the writes grew (else autovacuum may start during the next scenario's trials, on the core
    PostgreSQL shares with the client), and write a checkpoint where the role may."""
    asyncio.run(_settle(database_url, resources))


def seed_ids(
    database_url: str | None, url: str, rows: int, headers: Mapping[str, str], resources: list[str]
) -> dict[str, list[int]]:
    """The ids to load, of each resource: through the database when there is one (any number of
    rows, one statement a table), else through the service's API."""
    if database_url:
        return seed(database_url, rows, resources)
    return seed_over_http(url, rows, headers, resources)


def _answer(request: urllib.request.Request) -> bytes:
    try:
        with urllib.request.urlopen(request) as response:  # noqa: S310
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise HeadersError(
                f"the service answered {error.code} to {request.get_method()} "
                f"{urlsplit(request.full_url).path}: give its credentials in {ENVIRONMENT} "
                "or --header (see loadtest/README.md)"
            ) from None
        raise


def seed_over_http(
    url: str, rows: int, headers: Mapping[str, str], resources: list[str]
) -> dict[str, list[int]]:
    """Without database access: the ids the API lists, creating rows through it when too few
    (up to 1,000 a resource), each request carrying `headers`. The one seeder over HTTP: `make k6`
    and `make k6-cluster` use it too."""
    return {resource: _listed_or_created(url, rows, headers, resource) for resource in resources}


def _listed_or_created(url: str, rows: int, headers: Mapping[str, str], resource: str) -> list[int]:
    ids: list[int] = []
    after = 0
    while len(ids) < rows:
        target = f"{url}{BY_NAME[resource].prefix}?limit=500&after={after}"
        body = _answer(urllib.request.Request(target, headers=dict(headers)))  # noqa: S310
        data = orjson.loads(body)
        ids += [row["id"] for row in data["data"]]
        if data["next_after"] is None:
            break
        after = data["next_after"]
    create = OPERATIONS[f"{resource}.create"]
    while len(ids) < min(rows, 1000):
        request = urllib.request.Request(  # noqa: S310
            url + render(parts(create.path), _random),
            data=render(parts(create.body or ""), _random).encode(),
            headers={**headers, "Content-Type": "application/json"},
            method=create.method,
        )
        ids.append(orjson.loads(_answer(request))["id"])
    return ids[:rows]


def _random(name: str) -> int:
    return random.randrange(*UNIQUE_RANGE) if name == "u" else random.randrange(RANDOM_BELOW)
