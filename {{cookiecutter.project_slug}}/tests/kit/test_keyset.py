"""kit/keyset.py: a filtered or sorted page reads an index, on a table large enough for the
planner to prefer a sequential scan if it could, for every marked field of every resource; a
cursor is read only by the list that made it."""

import dataclasses
import json
from typing import Annotated, Any

import asyncpg
import pytest
from loadtest.plan.declared import seed_rows

from {{ cookiecutter.package_name }}.kit import (
    Declared,
    ProblemError,
    Resource,
    Sortable,
    Str,
    list_query,
)
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
                cursor = make_cursor(first, value, middle["id"], KEY, table=TABLE)
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


def _sorted_query() -> Any:
    marked = [resource for resource in MARKED if list_query(resource.fields).sortable]
    if not marked:
        pytest.skip("no resource marks a field :sort")
    query = list_query(marked[0].fields)
    return query, next(iter(query.sortable))


def test_a_cursor_signed_with_another_key_is_refused_naming_cursor() -> None:
    query, name = _sorted_query()
    first = query.model_validate({"sort": name})
    cursor = make_cursor(first, "1", 1, b"another key", table=TABLE)
    page = query.model_validate({"sort": name, "cursor": cursor})
    with pytest.raises(ProblemError) as refused:
        page_statement(TABLE, "id", page, KEY)
    assert refused.value.status == 400
    assert refused.value.detail.startswith("cursor:")
    page_statement(
        TABLE,
        "id",
        query.model_validate(
            {"sort": name, "cursor": make_cursor(first, "1", 1, KEY, table=TABLE)}
        ),
        KEY,
    )


def test_the_statement_text_depends_on_which_filters_are_sent_not_on_their_values() -> None:
    query, name = _sorted_query()
    nulls = [c.parameter for c in query.conditions if c.operator == "null"]
    if not nulls:
        pytest.skip("no optional field marked :filter")
    texts = {
        page_statement(TABLE, "id", query.model_validate({nulls[0]: value}), KEY)[0]
        for value in ("true", "false")
    }
    assert len(texts) == 1  # one prepared statement per combination: asyncpg's cache hits
    sorted_page = query.model_validate({nulls[0]: "true", "sort": name})
    assert page_statement(TABLE, "id", sorted_page, KEY)[0] not in texts


class _Named(Declared):
    """Two resources may declare a field of one name, sortable in both."""

    name: Annotated[str, Str(max_length=20), Sortable()]


def test_a_cursor_of_one_resources_list_is_refused_by_another_with_the_same_sort() -> None:
    query = list_query(_Named)
    cursor = make_cursor(query.model_validate({"sort": "name"}), "item-2", 2, KEY, table="items")
    page = query.model_validate({"sort": "name", "cursor": cursor})
    with pytest.raises(ProblemError) as refused:
        page_statement("orders", "id", page, KEY)
    assert refused.value.status == 400
    assert refused.value.detail.startswith("cursor:")
    _, arguments = page_statement("items", "id", page, KEY)
    assert arguments[1:] == [2, "item-2"]  # read by its own list: after ("item-2", 2)
