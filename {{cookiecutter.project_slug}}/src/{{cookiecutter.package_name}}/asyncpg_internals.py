"""Every private asyncpg name db.py and query_spans.py read, in one place: what the lease and
the unshielded release need, and what a database span says the connection is.

`queued_connections` says whether an acquire would take a connection without waiting;
`quick_release_holder` answers whether asyncpg's release of a connection would await nothing,
and if so returns the connection's pool holder; `reset_steps` gives the steps of asyncpg's
`Connection.reset` inside its time limit. Any piece it reads that is missing or of another
shape means None: the caller then takes asyncpg's own shielded `Pool.release`, the plain and safe
path, and one log line says why. The version range in pyproject.toml stops below asyncpg's next
release line; the bake's tests/test_db_release.py holds the pieces to the shape used here.
"""

from typing import Any

import structlog

logger = structlog.get_logger(__name__)
_logged: set[str] = set()


def _missing(error: AttributeError, event: str = "asyncpg_release_shielded") -> None:
    name = error.name or str(error)
    if name not in _logged:
        _logged.add(name)
        owner = type(getattr(error, "obj", None)).__name__
        logger.warning(event, reason=f"{owner}.{name} is missing")


def queued_connections(pool: Any) -> int:
    """How many connections wait in the pool's queue: an acquire takes one without waiting.

    asyncpg's public `get_idle_size()` asks every holder two questions (about 15 thousand
    instructions with 8 connections, more than the rest of the lease); its queue of free holders
    already knows. 0 (wait, so arm the acquire timer) when the queue is missing."""
    try:
        return int(pool._queue.qsize())
    except AttributeError as error:
        _missing(error, "acquire_timer_always_armed")
        return 0


def quick_release_holder(pool: Any, proxy: Any) -> Any | None:
    """The pool holder of `proxy` when releasing it awaits nothing: no transaction to roll back,
    no reset query, no reset callback, no cancellation to wait for, no close due (query limit,
    expired generation). Else None.

    Every piece is read in one go, each a plain attribute read: any one missing is the
    AttributeError that sends the release down asyncpg's own path (one read per piece through a
    helper cost some 30 Python calls a request)."""
    try:
        con = proxy._con
        if con is None:
            return None  # released already: asyncpg makes that a no-op, on its own path
        holder = proxy._holder
        protocol = con._protocol
        # What db.release calls next: read here, so that a missing one is found before it is
        # needed, whatever the state.
        holder._timeout, holder.release, pool._check_init, con._on_release  # noqa: B018
        if (
            holder._pool is not pool
            or holder._generation != pool._generation
            or pool._reset is not None
            or con._top_xact is not None
            or con.is_in_transaction()
            or con.get_reset_query()
            or protocol._is_cancelling()
            or protocol.queries_count >= holder._max_queries
        ):
            return None
    except AttributeError as error:
        _missing(error)
        return None
    return holder


def reset_steps(connection: Any) -> Any | None:
    """asyncpg's `Connection._reset` of `connection` (roll back an open transaction, drop listener
    callbacks): what `Connection.reset` runs inside `timeout(...)` before the reset query. None,
    said once, when asyncpg has no such piece."""
    try:
        return connection._reset
    except AttributeError as error:
        _missing(error)
        return None


def connection_target(connection: Any) -> tuple[Any, str | None, str | None]:
    """(address, database, user) asyncpg connected `connection` to, as OpenTelemetry's asyncpg
    instrumentation reads them for a span's attributes: the address a (host, port) tuple or a
    socket path. (None, None, None), said once, when asyncpg keeps them elsewhere: the spans then
    go without them."""
    try:
        parameters = connection._params
        return connection._addr, parameters.database, parameters.user
    except AttributeError as error:
        _missing(error, "database_spans_without_target")
        return None, None, None
