"""Idempotency-Key on POST (the IETF httpapi draft "The Idempotency-Key HTTP Header Field").

A create sent with the header commits with the record of its answer
(migrations/machinery/0000_idempotency_keys.py), or not at all: a resource's create in one
statement that stores its own answer (`create_once`, answer_key.py), any other write in a
transaction of the key's lock, its lookup, the write and the stored answer (`idempotently`). So,
across pods, crashes and restarts, a retry either finds the answer of a write that committed and
gets it again (`Idempotency-Replayed: true`, no new write), or finds nothing because the write
rolled back, and runs it. The same key with another request (method, path, body or client) is a
422; a retry while the first is still running is a 409 (the first holds the key's transaction
lock). Without the header a create runs as it always did: the same statement, no transaction.

Keys are kept per client (client.py) for IDEMPOTENCY_TTL_SECONDS; an expired key counts as absent
and is removed in small batches by the lifespan (`sweep_expired_keys`), never under a long lock.
"""

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Annotated

import asyncpg
import structlog
from fastapi import Header, Request
from starlette.responses import Response

from ..db import Connection, Database, Record
from .answer_key import AnswerKey, NotComposable, forget, taken
from .client import client_identity
from .problems import ProblemError
from .rows import row_response

HEADER = "Idempotency-Key"
REPLAYED = "Idempotency-Replayed"
MAX_KEY_LENGTH = 255
_KEY = re.compile(r"[\x21-\x7e]+")  # visible ASCII, as the draft's examples
# The answer's headers a replay repeats (what a create answers besides its body): their columns.
_STORED = (("Location", "location"), ("ETag", "etag"), ("Content-Type", "content_type"))
logger = structlog.get_logger(__name__)

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=HEADER,
        description="A key of your choice, unique per create you mean (a UUID): a retry with the "
        "same key and body gets the first answer again (with `Idempotency-Replayed: true`) and "
        "writes nothing. 1 to 255 visible ASCII characters; kept IDEMPOTENCY_TTL_SECONDS.",
        json_schema_extra={"pattern": "^[\\x21-\\x7e]+$", "maxLength": MAX_KEY_LENGTH},
    ),
]

# Transaction-scoped, so released by the commit or rollback; try-, so a concurrent retry is told
# 409 at once instead of waiting on a connection. 64-bit hash: a collision costs a spurious 409.
LOCK = "SELECT pg_try_advisory_xact_lock(hashtextextended($1 || ' ' || $2, 0))"
# A statement of its own after LOCK: its snapshot then sees what a former holder committed.
SELECT = """
    SELECT fingerprint, status, location, etag, content_type, body
      FROM idempotency_keys
     WHERE client = $1 AND key = $2 AND expires_at > now()
"""
# An expired row of the same key may still be there (the sweep has not come by): replaced.
INSERT = """
    INSERT INTO idempotency_keys
           (client, key, fingerprint, status, location, etag, content_type, body, expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))
    ON CONFLICT (client, key) DO UPDATE
       SET (fingerprint, status, location, etag, content_type, body, created_at, expires_at) =
           (EXCLUDED.fingerprint, EXCLUDED.status, EXCLUDED.location, EXCLUDED.etag,
            EXCLUDED.content_type, EXCLUDED.body, now(), EXCLUDED.expires_at)
"""
# One small batch: each DELETE locks at most BATCH rows (its LIMIT), for one short statement;
# rows another pod's sweep holds are skipped, not waited for.
BATCH = 500
DELETE_EXPIRED = """
    DELETE FROM idempotency_keys
     WHERE ctid = ANY(ARRAY(
               SELECT ctid FROM idempotency_keys
                WHERE expires_at <= now()
                LIMIT 500
                  FOR UPDATE SKIP LOCKED))
"""

Write = Callable[[Connection], Awaitable[Response]]
# A create's insert: the new row, its answer stored under the key when one is given.
Insert = Callable[[Connection, AnswerKey | None], Awaitable[Record]]


def _checked(key: str) -> str:
    if len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        raise ProblemError(
            400,
            f"The {HEADER} header must be 1 to {MAX_KEY_LENGTH} visible ASCII characters.",
        )
    return key


async def _fingerprint(request: Request, client: str) -> bytes:
    digest = hashlib.sha256()
    for part in (request.method.encode(), request.scope["path"].encode(), client.encode()):
        digest.update(part + b"\0")
    digest.update(request.scope.get("query_string", b"") + b"\0")
    digest.update(await request.body())  # read already, for validation: cached by Starlette
    return digest.digest()


def _replay(stored: Record) -> Response:
    headers = {REPLAYED: "true"}
    for name, column in _STORED:
        if stored[column] is not None:
            headers[name] = stored[column]
    return Response(stored["body"], status_code=stored["status"], headers=headers)


def _in_progress() -> ProblemError:
    return ProblemError(
        409,
        f"A request with this {HEADER} is still being processed; retry after it ends.",
        headers={"Retry-After": "1"},
    )


async def _claim(request: Request, key: str) -> tuple[str, str, bytes]:
    """The key as checked, the client it is kept for, and the request's fingerprint."""
    key = _checked(key.strip(" \t"))  # RFC 9110 §5.5: whitespace around a value is not of it
    client = await client_identity(request)
    return key, client, await _fingerprint(request, client)


async def idempotently(
    request: Request, key: str | None, database: Database, ttl_seconds: int, write: Write
) -> Response:
    """`write`'s answer; with a key, run at most once per (client, key) and answered again to a
    retry of the same request (see the module doc)."""
    if key is None:
        async with database.connection() as connection:
            return await write(connection)
    key, client, fingerprint = await _claim(request, key)
    return await _once(database, (client, key, fingerprint), ttl_seconds, write)


async def create_once(
    request: Request,
    key: str | None,
    database: Database,
    ttl_seconds: int,
    insert: Insert,
    *,
    location: str,
) -> Response:
    """The answer to a create: the row `insert` makes, 201 with Location `<location>/<id>`; with
    a key, the row and its answer stored in `insert`'s one statement (answer_key.py). That
    statement writes nothing when the key is taken: a 409 while its first request runs, else
    (or when the statement cannot store it) the transactional way `idempotently` runs."""

    def answer(record: Record) -> Response:
        return row_response(record, status_code=201, location=f"{location}/{record['id']}")

    if key is None:
        async with database.connection() as connection:
            return answer(await insert(connection, None))
    key, client, fingerprint = await _claim(request, key)
    answer_key = AnswerKey(client, key, fingerprint, float(ttl_seconds), location)
    try:
        async with database.connection() as connection:
            record = await insert(connection, answer_key)
    except NotComposable:
        pass
    except asyncpg.SyntaxOrAccessError:
        if answer_key.insert is None:
            raise
        forget(answer_key.insert)
    except asyncpg.NotNullViolationError as error:
        if not taken(error):
            raise
        raise _in_progress() from None
    except asyncpg.UniqueViolationError:
        pass  # the key stored already, or a unique field taken: answered the transactional way
    else:
        if answer_key.insert is None:  # written, but not with its answer: a broken insert
            raise RuntimeError("the create's insert did not store its answer (AnswerKey.storing)")
        return answer(record)

    async def write(connection: Connection) -> Response:
        return answer(await insert(connection, None))

    return await _once(database, (client, key, fingerprint), ttl_seconds, write)


async def _once(
    database: Database, claim: tuple[str, str, bytes], ttl_seconds: int, write: Write
) -> Response:
    """`write` in a transaction with the key's lock, lookup and stored answer."""
    client, key, fingerprint = claim
    async with database.connection() as connection, connection.transaction():
        if not await connection.fetchval(LOCK, client, key):
            raise _in_progress()
        stored = await connection.fetchrow(SELECT, client, key)
        if stored is not None:
            if stored["fingerprint"] != fingerprint:
                raise ProblemError(
                    422, f"This {HEADER} was used with another request; send a new key."
                )
            return _replay(stored)
        response = await write(connection)
        headers = response.headers
        await connection.execute(
            INSERT,
            client,
            key,
            fingerprint,
            response.status_code,
            *(headers.get(name) for name, _ in _STORED),
            bytes(response.body),
            float(ttl_seconds),
        )
        return response


async def remove_expired_keys(database: Database) -> int:
    """Delete every expired key, one small batch per statement; the number deleted."""
    removed = 0
    while True:
        async with database.connection() as connection:
            status = await connection.execute(DELETE_EXPIRED)
        count = int(status.rpartition(" ")[2])
        removed += count
        if count < BATCH:
            return removed


async def sweep_expired_keys(database: Database, every_seconds: float) -> None:
    """For the lifespan: remove expired keys now, then every `every_seconds`, until cancelled."""
    while True:
        try:
            removed = await remove_expired_keys(database)
            if removed:
                logger.info("idempotency_keys_expired", removed=removed)
        except Exception:  # a database away for a while must not end the sweeping for good
            logger.warning("idempotency_sweep_failed", exc_info=True)
        await asyncio.sleep(every_seconds)
