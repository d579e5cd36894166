"""Filtered and sorted keyset pages: one statement per page, its cost flat at any depth.

A sorted page continues after the last (sort value, id) of the previous one, in the order of the
index on (field, id) the migration made for a marked field, so each page is an index range scan
of `limit` rows however deep the walk is. NULLs go where that index has them: after every value
ascending, before every value descending. `(field, id) > (v, i)` skips NULLs, so a page that
starts among values and may reach the NULLs reads both ranges (a UNION ALL of two index scans).

The statement's text depends only on which filters are present, the sort and where the cursor
is (none, on a value, on a NULL): a handful of texts per resource, each with $n parameters, so
asyncpg's statement cache still hits. Values are bound, never written into the text.

The cursor is opaque to clients: base64url of (sort, a fingerprint of the list's table and its
filters, last value, last id) and an HMAC-SHA256 of them with the key every pod shares
(cursor_keys.py). A cursor altered, made for another resource's list (its sort may share the
name), another sort or other filters, or garbage is a 400 problem naming `cursor`, never a wrong
page.
"""

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from ..db import Connection
from .cursor_keys import accepted_keys
from .listing import Condition, ListQuery
from .problems import ProblemError

_MAC_BYTES = 16


def _fingerprint(table: str, query: ListQuery) -> str:
    # The table too: /items?sort=name and /orders?sort=name are different walks.
    sent = {condition.parameter: value for condition, value in query.filters()}
    canonical = json.dumps([table, sent], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _sign(payload: bytes, key: bytes) -> str:
    mac = hmac.new(key, payload, hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.urlsafe_b64encode(payload + mac).decode().rstrip("=")


def make_cursor(
    query: ListQuery, last_value: str | None, last_id: int, key: bytes, *, table: str
) -> str:
    fingerprint = _fingerprint(table, query)
    payload = json.dumps([query.sort, fingerprint, last_value, last_id])  # type: ignore[attr-defined]
    return _sign(payload.encode(), key)


def read_cursor(query: ListQuery, key: bytes, *, table: str) -> tuple[str | None, int]:
    """(last value, last id) of the query's cursor; a 400 problem for any cursor not made for
    this table's list, this sort and these filters with this key."""
    refused = ProblemError(
        400, "cursor: not a cursor of this list, sort and filters; start again without it."
    )
    token = query.cursor_sent or ""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise refused from None
    payload, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
    if len(raw) <= _MAC_BYTES or not any(
        hmac.compare_digest(mac, hmac.new(accepted, payload, hashlib.sha256).digest()[:_MAC_BYTES])
        for accepted in accepted_keys(key)
    ):
        raise refused
    sort, fingerprint, value, row_id = json.loads(payload)
    if sort != query.sort or fingerprint != _fingerprint(table, query):  # type: ignore[attr-defined]
        raise refused
    return value, row_id


def _where(condition: Condition, parameter: int) -> str:
    column = condition.column
    if condition.operator == "in":
        return f"{column} = ANY(${parameter})"
    if condition.operator == "null":
        return f"(${parameter}::boolean = ({column} IS NULL))"
    return f"{column} {condition.operator} ${parameter}"


def page_statement(table: str, columns: str, query: ListQuery, key: bytes) -> tuple[str, list[Any]]:
    """The one statement of the query's page, and its arguments: $1 is the page size."""
    sort: str | None = getattr(query, "sort", None)
    if query.cursor_sent is not None and sort is None:
        raise ProblemError(400, "cursor: a cursor pages a sort order; send the sort it came with.")
    if sort is not None and "after" in query.model_fields_set:
        raise ProblemError(400, "after: pages the id order; with sort, pass next_cursor as cursor.")
    arguments: list[Any] = [query.limit + 1]  # one more than the page: is there a next one?
    filters = []
    for condition, value in query.filters():
        arguments.append(value)
        filters.append(_where(condition, len(arguments)))
    if sort is None:
        arguments.append(query.after)
        branches = [[f"id > ${len(arguments)}"]]
        column, order, nullable = "id", "id", False
    else:
        column = sort.removeprefix("-")
        descending = sort.startswith("-")
        nullable = query.sortable[column]
        order = f"{column} DESC, id DESC" if descending else f"{column}, id"
        branches = _branches(table, query, key, column, descending, nullable, arguments)
    cast = "::text" if sort is not None else ""
    # Identifiers only from the declaration (table, columns, marked fields); values are bound.
    selects = [
        f"(SELECT {columns} FROM {table} WHERE {' AND '.join(where + filters) or 'true'}"  # noqa: S608
        f" ORDER BY {order} LIMIT $1)"
        for where in branches
    ]
    union = " UNION ALL ".join(selects)
    found = union
    if len(selects) > 1:  # a range of values, then the NULLs (or the other way round)
        found = f"SELECT * FROM ({union}) AS parts ORDER BY {order} LIMIT $1"  # noqa: S608
    # `page.*`, the row: a field named `page` would be taken for it (a column comes first).
    statement = f"""
    WITH found AS ({found}
    ), page AS (
        SELECT * FROM found ORDER BY {order} LIMIT $1 - 1
    ), last AS (
        SELECT {column}{cast} AS value, id FROM page ORDER BY {_reversed(order)} LIMIT 1
    )
    SELECT coalesce((SELECT json_agg(page.* ORDER BY {_qualified(order)}) FROM page), '[]')::text
               AS data,
           (SELECT count(*) FROM found) = $1 AS more,
           (SELECT value FROM last) AS last_value,
           (SELECT id FROM last) AS last_id
    """  # noqa: S608
    return statement, arguments


def _qualified(order: str) -> str:
    return ", ".join(f"page.{part}" for part in order.split(", "))


def _reversed(order: str) -> str:
    parts = [
        part.removesuffix(" DESC") if part.endswith(" DESC") else f"{part} DESC"
        for part in order.split(", ")
    ]
    return ", ".join(parts)


def _branches(
    table: str,
    query: ListQuery,
    key: bytes,
    column: str,
    descending: bool,
    nullable: bool,
    arguments: list[Any],
) -> list[list[str]]:
    """The WHERE conditions of each index range the page reads, in walk order."""
    if query.cursor_sent is None:
        return [[]]
    value, last_id = read_cursor(query, key, table=table)
    arguments.append(last_id)
    after_id = f"id {'<' if descending else '>'} ${len(arguments)}"
    if value is None:
        # On the NULLs: the rest of them, then (descending) every value.
        rest = [[f"{column} IS NULL", after_id]]
        return [*rest, [f"{column} IS NOT NULL"]] if descending else rest
    arguments.append(value)
    typed = f"(${len(arguments)}::text)::{query.column_types[column]}"
    beyond = [[f"({column}, id) {'<' if descending else '>'} ({typed}, ${len(arguments) - 1})"]]
    # Ascending, the NULLs come after every value.
    return [*beyond, [f"{column} IS NULL"]] if nullable and not descending else beyond


async def read_page(
    connection: Connection, *, table: str, columns: str, query: ListQuery, key: bytes
) -> str:
    """The page document: {"data": [...], "next_after": id-or-null, "next_cursor": ...}."""
    statement, arguments = page_statement(table, columns, query, key)
    record = await connection.fetchrow(statement, *arguments)
    assert record is not None  # aggregates: always one row
    more, last_value, last_id = record["more"], record["last_value"], record["last_id"]
    next_after = next_cursor = "null"
    if more and getattr(query, "sort", None) is None:
        next_after = str(last_id)
    elif more:
        next_cursor = f'"{make_cursor(query, last_value, last_id, key, table=table)}"'
    data: str = record["data"]
    return '{"data": ' + data + f', "next_after": {next_after}, "next_cursor": {next_cursor}' + "}"
