"""The asyncpg pool: created once in the lifespan, warmed, handed to routes, closed on shutdown."""

import asyncio
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from .asyncpg_internals import queued_connections
from .asyncpg_internals import quick_release_holder as _quick_release_holder
from .asyncpg_internals import reset_steps as _reset_steps
from .settings import Settings

# Repositories see these names; routes never see asyncpg at all.
Record = asyncpg.Record
if TYPE_CHECKING:
    Connection = PoolConnectionProxy[Record]
    _BaseConnection = asyncpg.Connection[Record]
else:
    Connection = PoolConnectionProxy
    _BaseConnection = asyncpg.Connection


class NoResetConnection(_BaseConnection):
    """Skip the reset query (advisory unlock, CLOSE ALL, UNLISTEN, RESET ALL) on release.

    It is one more round trip per request, for session state this service never leaves behind:
    asyncpg still rolls back a connection released inside a transaction, and statements keep
    their state to the transaction (SET LOCAL, pg_advisory_xact_lock, ON COMMIT DROP). A
    session-scoped SET, LISTEN or advisory lock would be seen by the next request on the
    connection; tests/test_db.py scans every sql.py for them. Measured per acquire + SELECT 1 + release
    (uvloop, one core): 130 -> 84 us of CPU, 501 -> 224 us of wall time.
    """

    def get_reset_query(self) -> str:
        return ""

    async def reset(self, *, timeout: float | None = None) -> None:  # noqa: ASYNC109 (asyncpg's)
        """asyncpg's reset; with no time limit (the pool's, for a connection acquired without
        one, as the lease acquires), its steps without entering a timeout that cannot fire:
        asyncio's Timeout was 4 % of a by-id request's samples (py-spy)."""
        steps = _reset_steps(self) if timeout is None else None
        if steps is None:
            await super().reset(timeout=timeout)
            return
        await steps()  # no reset query to run after them (get_reset_query)


# Errors after which a connection is not reused: the pool opens a fresh one in its place.
# InternalClientError: the protocol lost track of its state, as when the server ends the
# session under a query (tests/test_db_release.py sees it now and then).
_BROKEN = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.OperatorInterventionError,
)
# A pooled round trip answered this recently shows the database within reach: readiness asks it
# nothing more (Database.reachable). About one readiness period of the chart's.
ANSWERED_LATELY_SECONDS = 5.0
_NEVER = float("-inf")
# Database.close's bound, the probe's connection and the pool's together: the chart's check of the
# shutdown arithmetic counts this number (templates/_helpers.tpl, "shutdown"; docs/deploying.md).
CLOSE_SECONDS = 10


class _Lease:
    """`async with database.connection()`: acquire within the timeout, always release."""

    __slots__ = ("_connection", "_database")

    def __init__(self, database: "Database") -> None:
        self._database = database
        self._connection: Connection | None = None

    async def __aenter__(self) -> Connection:
        database = self._database
        pool = database.pool
        start = time.perf_counter()
        try:
            if queued_connections(pool):
                # A free connection is there to take: no wait, so no timer to arm and cancel
                # (acquire + release: 13.6 -> 11.3 us CPU, uvloop, one core). One that must
                # reconnect first is still bounded: the pool's connect timeout is the same.
                self._connection = await pool.acquire()
            else:
                # asyncio.timeout, not acquire(timeout=): asyncpg's wait_for wraps each acquire in
                # a Task (measured 84 -> 76.5 us CPU per acquire + query + release).
                async with asyncio.timeout(database.acquire_timeout):
                    self._connection = await pool.acquire()
        except _BROKEN as error:
            _unanswered(database, error)  # a pooled connection could not be opened again
            raise
        if database.on_acquire_wait is not None:
            database.on_acquire_wait(time.perf_counter() - start)
        return self._connection

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        connection = self._connection
        assert connection is not None
        if exc is None:
            self._database.answered_at = time.monotonic()
        elif isinstance(exc, _BROKEN) and not isinstance(exc, asyncpg.QueryCanceledError):
            # Without the reset query nothing on release notices a connection the server dropped
            # mid-query; handed out again, it fails the next request with InternalClientError.
            connection.terminate()
            _unanswered(self._database, exc)
        await release(self._database.pool, connection)


def _unanswered(database: "Database", error: BaseException) -> None:
    """A pooled connection failed: the last answer shows nothing any more, readiness asks on its
    own connection. A deadline (the acquire's, a route's) is a slow moment, not a lost database."""
    if not isinstance(error, TimeoutError):
        database.answered_at = _NEVER


async def release(pool: "asyncpg.Pool[Record]", connection: Connection) -> None:
    """Give `connection` back to `pool`: asyncpg's own release, minus its shield when nothing on
    the way back waits.

    asyncpg runs every release in a task of its own (asyncio.shield), so that a cancelled request
    cannot interrupt the ROLLBACK or reset query half-way. With no transaction open, no reset
    query (NoResetConnection), no cancellation in flight and no close due, the release awaits
    nothing: it cannot be interrupted, and the task only costs a task and two turns of the event
    loop. Anything else, or an asyncpg whose internals differ (asyncpg_internals.py), takes
    asyncpg's shielded release.
    """
    holder = _quick_release_holder(pool, connection)
    if holder is None:
        await pool.release(connection)
        return
    # What Pool.release does before its shield, then the holder's release (awaits nothing here).
    pool._check_init()  # type: ignore[attr-defined]
    connection._con._on_release()  # type: ignore[attr-defined]
    await holder.release(holder._timeout)


class Database:
    """A pool plus the acquire timeout every request must respect."""

    def __init__(
        self,
        pool: "asyncpg.Pool[Record]",
        probe: "ProbeConnection",
        acquire_timeout: float,
        on_acquire_wait: Callable[[float], None] | None = None,
    ) -> None:
        self.pool = pool
        # The readiness probe's connection, outside the pool (ProbeConnection says why).
        self.probe = probe
        self.acquire_timeout = acquire_timeout
        # Called with the seconds each acquire waited (the pool wait metric).
        self.on_acquire_wait = on_acquire_wait
        # time.monotonic() when a pooled round trip was last answered; unset by a pooled
        # connection that failed (_Lease).
        self.answered_at = _NEVER

    @classmethod
    async def connect(
        cls,
        settings: Settings,
        application_name: str,
        on_acquire_wait: Callable[[float], None] | None = None,
        connection_class: type[NoResetConnection] = NoResetConnection,
    ) -> "Database":
        # create_pool opens min_size connections before returning: the pool is warm at start-up.
        pool = await asyncpg.create_pool(
            settings.dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            timeout=settings.pool_acquire_timeout,
            connection_class=connection_class,
            # 0 behind PgBouncer transaction pooling: a named statement prepared on one server
            # connection is missing on the next (PgBouncer < 1.21 does not track them).
            statement_cache_size=settings.statement_cache_size,
            server_settings={
                "application_name": application_name,
                "statement_timeout": str(settings.statement_timeout_ms),
                # JSON built by PostgreSQL renders timestamps in this zone: UTC, like the API.
                "timezone": "UTC",
            },
        )
        probe = ProbeConnection(settings.dsn, f"{application_name}-probe")
        return cls(pool, probe, settings.pool_acquire_timeout, on_acquire_wait)

    def connection(self) -> _Lease:
        return _Lease(self)

    async def reachable(self, within: float) -> None:
        """Raise unless the database is within reach: a pooled round trip answered in the last
        ANSWERED_LATELY_SECONDS with no pooled connection failing since, else SELECT 1 answered
        within `within` seconds on the probe's own connection, never a pooled one, which a slow
        table can hold.

        The answers come first: behind PgBouncer the probe's connection is one more client, whose
        SELECT 1 waits with every other query for a server connection, so a busy pooler would
        fail the probe of every pod at once while each pod's requests are being answered; a
        database slow for everyone would too. A pod with no recent answer, or whose pooled
        connection just failed, asks on its own connection.
        """
        if time.monotonic() - self.answered_at < ANSWERED_LATELY_SECONDS:
            return
        await self.probe.ping(within)

    async def close(self, within: float = CLOSE_SECONDS) -> None:
        """Close the probe's connection and the pool at once, both within `within` seconds; past
        them asyncpg cuts what is left. The pool waits for borrowed connections, and a stuck one
        must not block shutdown forever; the probe's connection takes up to 1 s when the database
        no longer answers, which must not come on top of the bound the grace period counts."""
        try:
            async with asyncio.timeout(within):
                await asyncio.gather(self.probe.close(), self.pool.close())
        except TimeoutError:
            self.pool.terminate()  # a cancelled Pool.close terminates too: said, not relied on


class ProbeConnection:
    """One connection of the readiness probe's own, outside the pool, opened at the first ping
    and again after any failure.

    Readiness asks whether this pod can reach the database, not whether the pool has a free
    connection: when one slow table holds every pooled connection, a probe that waits for one
    fails on every pod at once, and every pod leaves the Service while the healthy routes could
    still be served (POOL_ACQUIRE_TIMEOUT turns the slow ones into 503s). One connection more
    per pod, counted in the chart's connection arithmetic.
    """

    __slots__ = ("_application_name", "_connection", "_dsn", "_lock")

    def __init__(self, dsn: str, application_name: str) -> None:
        self._dsn = dsn
        self._application_name = application_name
        self._connection: asyncpg.Connection[Record] | None = None
        # Probes that overlap (startup, readiness, a person with curl) take turns on it.
        self._lock = asyncio.Lock()

    async def ping(self, within: float) -> None:
        """Raise unless SELECT 1 is answered within `within` seconds, the connect included."""
        async with asyncio.timeout(within), self._lock:
            connection = self._connection
            if connection is None or connection.is_closed():
                # No named statement: behind PgBouncer in transaction pooling the next ping may
                # reach another server connection, where it would not exist.
                connection = self._connection = await asyncpg.connect(
                    self._dsn,
                    statement_cache_size=0,
                    server_settings={"application_name": self._application_name},
                )
            try:
                await connection.fetchval("SELECT 1")
            except BaseException:
                # A query cut by the timeout leaves the protocol mid-message: never reuse it.
                self._connection = None
                connection.terminate()
                raise

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # Said goodbye to, unless the database is not answering: then cut.
            try:
                await connection.close(timeout=1.0)
            except Exception:  # closing a connection that is gone already
                connection.terminate()
