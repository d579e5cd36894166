"""A create that stores its own answer under its Idempotency-Key, in its one statement.

A create sent with a key used to run in a transaction of six round trips (BEGIN, the key's lock,
its lookup, the row, the stored answer, COMMIT): +340 thousand instructions over a create without
one (callgrind, the real server). `AnswerKey.storing(INSERT)` makes of a resource's INSERT (a
WITH statement whose last SELECT answers the row's id, version and JSON body, as the template
writes it) one statement that also stores the answer a create gives, `row_response(record, 201,
Location: <collection>/<id>)`, under the key: one round trip, as without a key.

The statement can only succeed or fail as a whole. When the key's transaction lock is held by
another request (a retry while the first runs: its own statement or kit/idempotency.py's
transaction), the key is NULL and refused by its column: a 409. When the key is already stored
(a retry of a create that committed, the key used with another request, or an expired row the
sweep has not removed), or the row's own unique field is taken (maybe by the first of the
retried creates), it is a unique violation: nothing was written, and idempotency.py runs the
create its transactional way, which answers each case as before.
"""

import re
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import structlog

from .conditional import etag
from .responses import JSONBytesResponse

logger = structlog.get_logger(__name__)
CREATED = 201
# What a create's answer is made of (kit/rows.py `row_response`): the ETag is the version in
# quotes (conditional.py), the body PostgreSQL's JSON text as UTF-8.
_ETAG_SQL = "'\"' || answer.version || '\"'"
assert etag(7) == '"7"', "the stored ETag is made in SQL the way conditional.etag makes it"
_PARAMETER = re.compile(r"\$(\d+)")
_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)
# The CTEs' names are the template's: a resource's own are named after what they hold (`new`).
_STORE = """{head},
    idempotency_answer AS (
        {final}
    ),
    idempotency_stored AS (
        INSERT INTO idempotency_keys
               (client, key, fingerprint, status, location, etag, content_type, body, expires_at)
        SELECT {client},
               -- NULL, which the column refuses, while another request holds the key's lock
               CASE WHEN pg_try_advisory_xact_lock(hashtextextended({client} || ' ' || {key}, 0))
                    THEN {key} END,
               {fingerprint}, {status}, {location} || answer.id, {etag}, {content_type},
               convert_to(answer.body, 'UTF8'), now() + make_interval(secs => {ttl})
          FROM idempotency_answer AS answer
    )
    SELECT * FROM idempotency_answer"""


class NotComposable(Exception):
    """The statement is not an INSERT this module can make store its answer."""


def _depth_zero(statement: str) -> list[bool]:
    """For each character: whether it is outside parentheses, quotes and comments."""
    outside, depth, index, length = [], 0, 0, len(statement)
    while index < length:
        char = statement[index]
        pair = statement[index : index + 2]
        end = None
        if char in "'\"":
            end = statement.find(char, index + 1)
        elif pair == "--":
            end = statement.find("\n", index)
        elif pair == "/*":
            end = statement.find("*/", index) + 1
        if end is not None:
            if end < 1:
                raise NotComposable("an unterminated quote or comment")
            outside += [False] * (end + 1 - index)
            index = end + 1
            continue
        depth += (char == "(") - (char == ")")
        outside.append(depth == 0 and char != ")")
        index += 1
    return outside


def compose(insert: str) -> str:
    """`insert` (a WITH statement whose main query is a SELECT answering id, version and body)
    storing that answer under the key: the key's values are the parameters after its own."""
    if not insert.lstrip().upper().startswith("WITH"):
        raise NotComposable("not a WITH statement")
    outside = _depth_zero(insert)
    main = next((m.start() for m in _SELECT.finditer(insert) if outside[m.start()]), None)
    # The main query is the SELECT right after the last query of the WITH list, in parentheses.
    if main is None or not insert[:main].rstrip().endswith(")"):
        raise NotComposable("no SELECT answers the statement")
    last = max((int(number) for number in _PARAMETER.findall(insert)), default=0)
    names = ("client", "key", "fingerprint", "status", "location", "content_type", "ttl")
    parameters = {name: f"${last + number}" for number, name in enumerate(names, 1)}
    return _STORE.format(
        head=insert[:main].rstrip(), final=insert[main:].strip(), etag=_ETAG_SQL, **parameters
    )


_composed: dict[str, str | None] = {}


def forget(insert: str) -> None:
    """`insert` composed into a statement PostgreSQL refused (its answer has no id, version or
    body): its creates take the transactional way from now on, said once."""
    if _composed.get(insert) is not None:
        _composed[insert] = None
        logger.warning("idempotent_create_in_a_transaction", reason="the statement was refused")


@dataclass(slots=True)
class AnswerKey:
    """An Idempotency-Key a create is to store its answer under (idempotency.py makes it)."""

    client: str
    key: str
    fingerprint: bytes
    ttl_seconds: float
    location: str  # the collection's path: the answer's Location is <location>/<id>
    insert: str | None = field(default=None, init=False)  # what `storing` composed

    def storing(self, insert: str) -> tuple[str, tuple[Any, ...]]:
        """The statement that runs `insert` and stores its answer under this key, and the
        parameters to pass after `insert`'s own. NotComposable when `insert` cannot."""
        statement = _composed.get(insert, "")
        if statement == "":
            try:
                statement = _composed[insert] = compose(insert)
            except NotComposable as error:
                _composed[insert] = None
                logger.warning("idempotent_create_in_a_transaction", reason=str(error))
                raise
        if statement is None:
            raise NotComposable("said once")
        self.insert = insert
        location = f"{self.location}/"
        media_type = JSONBytesResponse.media_type
        return statement, (
            self.client, self.key, self.fingerprint, CREATED, location, media_type,
            self.ttl_seconds,
        )  # fmt: skip


def taken(error: asyncpg.PostgresError) -> bool:
    """Whether `error` says another request holds the key's lock (a NULL key refused)."""
    return (
        isinstance(error, asyncpg.NotNullViolationError)
        and error.table_name == "idempotency_keys"
        and error.column_name == "key"
    )
