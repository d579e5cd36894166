"""kit/keyset.py: a filtered or sorted page reads an index, on a table large enough for the
planner to prefer a sequential scan if it could, for every marked field of every resource."""

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from loadtest.declared import seed_rows

from {{ cookiecutter.package_name }}.kit import Resource, list_query
from {{ cookiecutter.package_name }}.kit.keyset import make_cursor, page_statement
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES

ROWS = 20_000
KEY = b"test key"
TABLE = "plan_rows"
# Resources with a field marked :filter or :sort.
MARKED = [
    resource
    for resource in RESOURCES
    if list_query(resource.fields).conditions or list_query(resource.fields).sortable
]


def _scans(plan: Any) -> list[str]:
    """Every node type of an EXPLAIN (FORMAT JSON) plan."""
    found = [plan["Node Type"]]
    for child in plan.get("Plans", []):
        found += _scans(child)
    return found


@pytest.fixture
async def connection(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_url)
    try:
        yield connection
    finally:
        await connection.close()


async def _plan(connection: asyncpg.Connection, statement: tuple[str, list[Any]]) -> list[str]:
    text, arguments = statement
    explained = await connection.fetchval(f"EXPLAIN (FORMAT JSON) {text}", *arguments)
    return _scans(json.loads(explained)[0]["Plan"])


@pytest.mark.skipif(not MARKED, reason="no resource marks a field :filter or :sort")
@pytest.mark.parametrize("resource", MARKED, ids=[resource.table for resource in MARKED])
async def test_sorted_filtered_and_deep_pages_read_an_index_not_the_whole_table(
    connection: asyncpg.Connection, resource: Resource
) -> None:
    query = list_query(resource.fields)
    columns = ", ".join(
        ["id", *resource.fields.model_fields, "created_at", "updated_at", "version"]
    )
    async with connection.transaction():  # the table is this connection's, dropped at commit
        await connection.execute(
            f"CREATE TEMP TABLE {TABLE} (LIKE {resource.table} INCLUDING ALL) ON COMMIT DROP"
        )
        await connection.execute(seed_rows(dataclasses.replace(resource, table=TABLE)), 1, ROWS)
        await connection.execute(f"ANALYZE {TABLE}")
        middle = await connection.fetchrow(f"SELECT * FROM {TABLE} ORDER BY id OFFSET {ROWS // 2}")
        assert middle is not None
        pages: dict[str, Any] = {}
        for name in query.sortable:
            for order in (name, f"-{name}"):
                first = query.model_validate({"sort": order})
                pages[f"sort={order}"] = first
                value = await connection.fetchval(
                    f"SELECT {name}::text FROM {TABLE} WHERE id = $1", middle["id"]
                )
                cursor = make_cursor(first, value, middle["id"], KEY)
                pages[f"sort={order}, deep"] = query.model_validate(
                    {"sort": order, "cursor": cursor}
                )
        for condition in query.conditions:
            if condition.operator == "=":
                sent = await connection.fetchval(
                    f"SELECT to_json({condition.column}) #>> ARRAY[]::text[] FROM {TABLE} WHERE id = $1",
                    middle["id"],
                )
                pages[f"{condition.parameter}="] = query.model_validate({condition.parameter: sent})
        for case, page in pages.items():
            nodes = await _plan(connection, page_statement(TABLE, columns, page, KEY))
            assert "Seq Scan" not in nodes, f"{resource.table}: {case}: {nodes}"
