"""Every private asyncpg name db.py reads, in one place: what the unshielded release needs.

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
_MISSING = object()
_logged: set[str] = set()


def _read(owner: Any, name: str) -> Any:
    value = getattr(owner, name, _MISSING)
    if value is _MISSING and name not in _logged:
        _logged.add(name)
        logger.warning(
            "asyncpg_release_shielded", reason=f"{type(owner).__name__}.{name} is missing"
        )
    return value


def quick_release_holder(pool: Any, proxy: Any) -> Any | None:
    """The pool holder of `proxy` when releasing it awaits nothing: no transaction to roll back,
    no reset query, no reset callback, no cancellation to wait for, no close due (query limit,
    expired generation). Else None."""
    con = _read(proxy, "_con")
    if con is None or con is _MISSING:
        return None  # released already (asyncpg makes that a no-op), or reshaped: its own path
    holder = _read(proxy, "_holder")
    protocol = _read(con, "_protocol")
    pieces = (
        holder,
        protocol,
        is_cancelling := _read(protocol, "_is_cancelling"),
        queries := _read(protocol, "queries_count"),
        max_queries := _read(holder, "_max_queries"),
        generation := _read(holder, "_generation"),
        _read(holder, "_timeout"),
        _read(holder, "_pool"),
        _read(holder, "release"),
        _read(pool, "_generation"),
        _read(pool, "_reset"),
        _read(pool, "_check_init"),
        _read(con, "_top_xact"),
        _read(con, "_on_release"),
    )
    if any(piece is _MISSING for piece in pieces):
        return None
    if (
        holder._pool is not pool
        or generation != pool._generation
        or pool._reset is not None
        or con._top_xact is not None
        or con.is_in_transaction()
        or con.get_reset_query()
        or is_cancelling()
        or queries >= max_queries
    ):
        return None
    return holder


def reset_steps(connection: Any) -> Any | None:
    """asyncpg's `Connection._reset` of `connection` (roll back an open transaction, drop listener
    callbacks): what `Connection.reset` runs inside `timeout(...)` before the reset query. None,
    said once, when asyncpg has no such piece."""
    steps = _read(connection, "_reset")
    return None if steps is _MISSING else steps
