"""The key that signs sorted list pages' cursors: one for every pod, with nothing to configure.

The migrations make it once (migrations/machinery/0001_cursor_keys.py: 32 random bytes from
PostgreSQL's own generator, in a one-row table) and every process reads it at start-up
(`load_cursor_keys`, from the lifespan): pods share the database, so they share the key, and a
cursor made by one pod holds on another and after a rollout. CURSOR_SECRET, when set, overrides
it. `python -m <package> rotate-cursor-key` makes a new key and keeps the old one as
`previous_key`: pods read both at their next start (a rollout), sign with the new one and still
accept cursors of the old one until the next rotation.

Fails closed: without the table (migrations not applied) a process signs with a random key of its
own, says so once, and a cursor then fails (400) on another pod: a refused page, never a wrong one.
"""

import secrets

import asyncpg
import structlog
from pydantic import SecretStr

from ..db import Database
from ..settings import Settings

logger = structlog.get_logger(__name__)

SELECT_KEYS = "SELECT signing_key, previous_key FROM cursor_keys WHERE id = 1"
# The same 32 random bytes as the migration's: two gen_random_uuid(), no pgcrypto needed.
ROTATE = """
    UPDATE cursor_keys
       SET previous_key = signing_key,
           signing_key = decode(
               replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'),
           rotated_at = now()
     WHERE id = 1
 RETURNING rotated_at
"""

# The key when neither CURSOR_SECRET nor the database gives one: this process's own.
_PROCESS_KEY = secrets.token_bytes(32)
_warned = False
# What this process read from the database at start-up: (signing key, the one before it).
_database_keys: tuple[bytes, bytes | None] | None = None


def cursor_key(secret: SecretStr | None) -> bytes:
    """The key that signs this process's cursors: CURSOR_SECRET if set, else the database's."""
    global _warned
    if secret is not None:
        return secret.get_secret_value().encode()
    if _database_keys is not None:
        return _database_keys[0]
    if not _warned:
        _warned = True
        logger.warning(
            "cursor_key_of_this_process",
            detail="no cursor_keys table (run the migrations) and no CURSOR_SECRET: cursors are "
            "signed with a key of this process only and fail (400) on another pod or after a "
            "restart",
        )
    return _PROCESS_KEY


def accepted_keys(key: bytes) -> tuple[bytes, ...]:
    """The keys a cursor may be signed with when this process signs with `key`: the key, and
    the database's previous one while `key` is the database's signing key."""
    if _database_keys is not None and key == _database_keys[0] and _database_keys[1]:
        return (key, _database_keys[1])
    return (key,)


async def load_cursor_keys(database: Database, secret: SecretStr | None) -> None:
    """Read the shared key once, at start-up; CURSOR_SECRET set, nothing is read."""
    global _database_keys
    if secret is None:
        try:
            async with database.connection() as connection:
                row = await connection.fetchrow(SELECT_KEYS)
        except asyncpg.UndefinedTableError:
            row = None
        _database_keys = None if row is None else (row["signing_key"], row["previous_key"])
    cursor_key(secret)  # said at start-up, not in the first list request's log context


async def rotate_cursor_key(settings: Settings) -> str:
    """Make a new signing key, keep the old one as previous; the time of the rotation."""
    connection = await asyncpg.connect(
        settings.dsn,
        timeout=settings.pool_acquire_timeout,
        statement_cache_size=0,  # one statement, once
        server_settings={"statement_timeout": str(settings.statement_timeout_ms)},
    )
    try:
        rotated_at = await connection.fetchval(ROTATE)
    finally:
        await connection.close()
    if rotated_at is None:
        raise RuntimeError("cursor_keys has no row: run the migrations first")
    return str(rotated_at)
