"""The baked service behind a real PgBouncer (the Debian binary) in transaction pooling mode.

PgBouncer 1.18, the version Debian ships here, does not track prepared statements
(max_prepared_statements arrived in 1.21), so the service must run with STATEMENT_CACHE_SIZE=0:
asyncpg then only uses the unnamed statement, which lives and dies inside one transaction.
"""

import asyncio
import os
import pwd
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import psycopg
import pytest

from .baking import PYTEST, load_dev_module, load_module, run
from .serving import Served, migrated_database, start_service

PGBOUNCER = "pgbouncer"  # on PATH (Debian's is /usr/sbin/pgbouncer), or every test here skips
# PgBouncer refuses to run as root; devdb creates this user to run PostgreSQL the same way.
SERVICE_USER = "embedded_postgres"

pytestmark = pytest.mark.needs("pgbouncer")


def _version() -> tuple[int, int]:
    output = subprocess.run(
        [PGBOUNCER, "--version"], capture_output=True, text=True, check=True
    ).stdout
    major, minor = output.split()[1].split(".")[:2]  # "PgBouncer 1.18.0"
    return int(major), int(minor)


def _config(folder: Path, listen_port: int, server_host: str, server_port: int) -> str:
    # 1.21+ can track protocol-level prepared statements; tracking is off (0) unless asked for,
    # and it stays off here so that the tests describe the mode STATEMENT_CACHE_SIZE=0 is for.
    tracking = "max_prepared_statements = 0" if _version() >= (1, 21) else ""
    return f"""
[databases]
; Every database name goes to the same PostgreSQL: the suite creates its own database.
* = host={server_host} port={server_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen_port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 10
max_client_conn = 200
; asyncpg sends statement_timeout at connect; PgBouncer refuses unknown startup parameters.
; Behind PgBouncer the timeout belongs on the role: ALTER ROLE ... SET statement_timeout.
ignore_startup_parameters = statement_timeout
logfile = {folder}/pgbouncer.log
pidfile = {folder}/pgbouncer.pid
{tracking}
"""


def _let_service_user_in(folder: Path) -> dict[str, object]:
    """As root, run PgBouncer as the unprivileged user and let it reach its folder."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(SERVICE_USER)  # created by the throwaway PostgreSQL's start-up
    for path in [folder, *folder.parents]:
        path.chmod(path.stat().st_mode | stat.S_IXOTH | stat.S_IROTH)
    os.chown(folder, entry.pw_uid, entry.pw_gid)
    return {"user": SERVICE_USER, "group": entry.pw_gid, "extra_groups": []}


@pytest.fixture(scope="module")
def pgbouncer_url(
    postgres_url: str, default_project: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("pgbouncer")
    server = urlsplit(postgres_url)
    devdb = load_dev_module(default_project, "devdb")
    port = devdb.free_port()
    (folder / "userlist.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(
        _config(folder, port, server.hostname or "127.0.0.1", server.port or 5432)
    )
    process = subprocess.Popen(
        [PGBOUNCER, str(folder / "pgbouncer.ini")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        **_let_service_user_in(folder),  # type: ignore[call-overload]
    )
    url = urlunsplit(server._replace(netloc=f"postgres@127.0.0.1:{port}"))
    try:
        _wait_until_accepting(process, url, folder / "pgbouncer.log")
        yield url
    finally:
        # A throwaway: killed, not asked to stop (its shutdown may wait on clients still connected).
        process.kill()
        process.wait(timeout=10)
        assert process.stderr is not None
        process.stderr.close()


def _wait_until_accepting(process: "subprocess.Popen[bytes]", url: str, log: Path) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            asyncio.run(_fetchval(url, "SELECT 1"))
            return
        except (OSError, asyncpg.PostgresError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            detail = log.read_text()[-2000:] if log.exists() else ""
            raise AssertionError(f"pgbouncer did not start: {detail}")
        time.sleep(0.05)  # polling a process that is starting: there is no event to wait on


async def _fetchval(url: str, query: str) -> object:
    connection = await asyncpg.connect(url, statement_cache_size=0)
    try:
        return await connection.fetchval(query)
    finally:
        await connection.close()


def _transactions_through(pgbouncer_url: str) -> dict[str, int]:
    """Transactions PgBouncer has pooled, per database (SHOW STATS on its admin console, which
    only speaks the simple query protocol)."""
    admin = urlunsplit(urlsplit(pgbouncer_url)._replace(path="/pgbouncer"))
    with psycopg.connect(admin, autocommit=True, cursor_factory=psycopg.ClientCursor) as connection:
        cursor = connection.execute("SHOW STATS")
        columns = [column.name for column in cursor.description or []]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    return {str(row["database"]): int(row["total_xact_count"]) for row in rows}


async def _query_again_on_another_server_connection(settings: object, database: Any) -> None:
    """`database`: the bake's `db.Database` class, loaded from its src/ at run time."""
    db = await database.connect(settings, "pgbouncer-test")
    try:
        async with db.connection() as first, db.connection() as second:
            # Outside a transaction each query is a transaction of its own, on whichever server
            # connection PgBouncer picks. The second client pins the first server connection in
            # a transaction, so the first client's repeat lands on a new one.
            await first.fetchval("SELECT 41 + 1")
            async with second.transaction():
                await second.fetchval("SELECT 1")
                await first.fetchval("SELECT 41 + 1")
    finally:
        await db.close()


def test_default_statement_cache_breaks_behind_transaction_pooling(
    default_project: Path, pgbouncer_url: str
) -> None:
    """Why the setting exists: a cached named statement is missing on the next server connection."""
    settings = load_module(default_project, "inventory_service", "settings")
    db = load_module(default_project, "inventory_service", "db")
    cached = settings.Settings(database_url=pgbouncer_url, pool_min_size=2, pool_max_size=2)
    assert cached.statement_cache_size > 0
    with pytest.raises(asyncpg.PostgresError, match="prepared statement"):
        asyncio.run(_query_again_on_another_server_connection(cached, db.Database))
    uncached = settings.Settings(
        database_url=pgbouncer_url, pool_min_size=2, pool_max_size=2, statement_cache_size=0
    )
    asyncio.run(_query_again_on_another_server_connection(uncached, db.Database))


@pytest.mark.slow
def test_service_passes_its_crud_suite_through_pgbouncer_in_transaction_mode(
    default_project: Path, pgbouncer_url: str
) -> None:
    before = _transactions_through(pgbouncer_url)
    tests = default_project / "tests"
    suites = [
        str(path.relative_to(default_project)) for path in (tests / "items", tests / "health")
    ]
    result = run(
        default_project, *PYTEST, "-rs", *suites, DATABASE_URL=pgbouncer_url,
        STATEMENT_CACHE_SIZE="0", timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
    # The only skips: the list tests of filters and sort orders, for a default resource that
    # marks no field :filter or :sort, and the generated client's walk (`make client-check`
    # installs the client). Nothing is skipped for want of what PgBouncer offers.
    skips = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    unmarked = (
        "got empty parameter set",
        "filters declared",
        "sortable field declared",
        "the Python client is not installed",
    )
    assert all(any(reason in line for reason in unmarked) for line in skips), skips
    after = _transactions_through(pgbouncer_url)
    # The suite's own database (test_inventory_service_<hex>) went through PgBouncer.
    pooled = {
        name: count - before.get(name, 0)
        for name, count in after.items()
        if name.startswith("test_")
    }
    assert pooled
    assert max(pooled.values()) > 50


async def _busy_pgbouncer(url: str, clients: int, stop: asyncio.Event) -> None:
    """`clients` connections through PgBouncer, each running half-second queries until `stop`:
    every server connection busy, the other clients queued for one (other pods under load)."""

    async def client() -> None:
        connection = await asyncpg.connect(url, statement_cache_size=0)
        try:
            while not stop.is_set():
                await connection.execute("SELECT pg_sleep(0.5)")
        finally:
            await connection.close()

    await asyncio.gather(*(client() for _ in range(clients)))


async def _probed_while_pgbouncer_is_busy(served: Served, through: str) -> dict[str, list[int]]:
    stop = asyncio.Event()
    answers: dict[str, list[int]] = {"traffic": [], "ready": []}

    async def traffic(http: httpx.AsyncClient) -> None:
        while not stop.is_set():
            answers["traffic"].append((await http.get("/items/1")).status_code)

    busy = asyncio.create_task(_busy_pgbouncer(through, 50, stop))
    async with (
        httpx.AsyncClient(base_url=served.url, timeout=20) as http,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.metrics_port}", timeout=2) as kubelet,
    ):
        requests = [asyncio.create_task(traffic(http)) for _ in range(2)]
        try:
            await asyncio.sleep(3)  # the queue forms; the first requests come back
            for _ in range(4):
                answers["ready"].append((await kubelet.get("/readyz")).status_code)
                await asyncio.sleep(0.5)
        finally:
            stop.set()
            await asyncio.gather(busy, *requests)
    return answers


@pytest.mark.slow
def test_readiness_holds_while_pgbouncer_queues_every_client_for_a_server_connection(
    default_project: Path, postgres_url: str, pgbouncer_url: str, tmp_path: Path
) -> None:
    """Behind PgBouncer the probe's connection of its own is one more client connection: its
    SELECT 1 waits in PgBouncer's queue like any query. With every server connection busy (other
    pods' half-second queries), a query waits about two seconds for one: the pod's requests are
    answered in that time, and readiness must not take it, and with it every pod, out of the
    Service for a moment of the shared pooler."""
    with migrated_database(default_project, postgres_url, "pgbouncer_readiness") as direct:
        through = urlunsplit(urlsplit(direct)._replace(netloc=urlsplit(pgbouncer_url).netloc))
        served = start_service(
            default_project, through, tmp_path / "service.log",
            STATEMENT_CACHE_SIZE="0", POOL_MIN_SIZE="2", POOL_MAX_SIZE="2",
        )  # fmt: skip
        try:
            answers = asyncio.run(_probed_while_pgbouncer_is_busy(served, through))
        finally:
            served.process.terminate()
            served.process.wait(timeout=30)
    # The pod's requests were answered (no such row) while PgBouncer queued them.
    assert set(answers["traffic"]) == {404}, served.output()[-3000:]
    assert answers["ready"] == [200] * 4, served.output()[-3000:]
