"""Each resource's declaration, its migrated table and its SQL agree, for every resource the
service serves (serving/resources.py).

A field is declared once (schemas.py) but stored by a migration written beside it: a field
declared without a migration, a column migrated without a declaration, a type, a nullability or
a unique constraint that differs, a marked field without its (field, id) index, or a statement of
sql.py that no longer fits the table fails here, at test time, instead of as a 500 in production.
A retired field (`retired_fields` of the declaration: out of it, its column dropped by a later
revision) keeps its column, which no statement names and every insert can leave out.
"""

import importlib
import re
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi.routing import APIRoute

from {{ cookiecutter.package_name }}.kit import Resource
from {{ cookiecutter.package_name }}.kit.listing import is_filterable, is_sortable
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES

from .declared import is_nullable, is_unique_field, marker_of, new_body

STORED_BEFORE = ["id"]
STORED_AFTER = ["created_at", "updated_at", "version"]
# A statement starts with one of these; other upper-case constants (TABLE, COLUMNS) are parts.
STATEMENT_WORDS = {"SELECT", "INSERT", "UPDATE", "DELETE", "WITH"}

COLUMNS = """
    SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull AS not_null,
           atthasdef AS has_default
      FROM pg_attribute
     WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
     ORDER BY attnum
"""
# Unique constraints on one column: the column and the constraint's name (the 409 names it).
UNIQUE_COLUMNS = """
    SELECT attribute.attname, constraint_.conname
      FROM pg_constraint AS constraint_
      JOIN pg_attribute AS attribute
        ON attribute.attrelid = constraint_.conrelid AND attribute.attnum = constraint_.conkey[1]
     WHERE constraint_.conrelid = $1::regclass
       AND constraint_.contype = 'u'
       AND cardinality(constraint_.conkey) = 1
"""

# The indexes of a table: name and definition.
INDEXES = """
    SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS definition
      FROM pg_index
     WHERE indrelid = $1::regclass
"""


def _sql_module(resource: Resource) -> Any:
    package = resource.fields.__module__.rpartition(".")[0]
    return importlib.import_module(f"{package}.sql")


def _statements(resource: Resource) -> dict[str, str]:
    """The resource's statements: its sql module's upper-case str constants that are SQL."""
    return {
        name: value
        for name, value in vars(_sql_module(resource)).items()
        if name.isupper()
        and isinstance(value, str)
        and next(iter(value.split(None, 1)), "") in STATEMENT_WORDS
    }


FIELDS = [(resource, name) for resource in RESOURCES for name in resource.fields.model_fields]
STATEMENTS = [(resource, name) for resource in RESOURCES for name in _statements(resource)]


async def _columns(connection: asyncpg.Connection, table: str) -> dict[str, asyncpg.Record]:
    return {row["attname"]: row for row in await connection.fetch(COLUMNS, table)}


@pytest.mark.parametrize("resource", RESOURCES, ids=[resource.table for resource in RESOURCES])
async def test_the_table_has_exactly_the_declared_fields_and_the_stored_columns(
    connection: asyncpg.Connection, resource: Resource
) -> None:
    columns = set(await _columns(connection, resource.table))
    declared = {*STORED_BEFORE, *resource.fields.model_fields, *STORED_AFTER}
    retired = set(resource.fields.retired_fields)
    assert columns - declared - retired == set(), "columns no field declares (schemas.py)"
    assert declared - columns == set(), "declared fields no migration added"
    assert retired - columns == set(), "retired fields whose column is dropped: unretire them"
    assert retired & declared == set(), "fields both declared and retired"


@pytest.mark.parametrize("resource", RESOURCES, ids=[resource.table for resource in RESOURCES])
async def test_a_retired_fields_column_is_named_by_no_statement_and_left_out_by_inserts(
    connection: asyncpg.Connection, resource: Resource
) -> None:
    columns = await _columns(connection, resource.table)
    for field in resource.fields.retired_fields:
        named = [
            name
            for name, statement in _statements(resource).items()
            if re.search(rf"\b{field}\b", statement)
        ]
        assert named == [], f"{field} is retired but named by {named}"
        column = columns[field]
        assert not column["not_null"] or column["has_default"], (
            f"{resource.table}.{field} is NOT NULL without a default: every insert, which no "
            "longer names it, fails; drop NOT NULL in the revision that retires it"
        )


@pytest.mark.parametrize(
    ("resource", "field"), FIELDS, ids=[f"{resource.table}-{field}" for resource, field in FIELDS]
)
async def test_each_declared_fields_column_has_its_type_nullability_and_uniqueness(
    connection: asyncpg.Connection, resource: Resource, field: str
) -> None:
    column = (await _columns(connection, resource.table)).get(field)
    assert column is not None, f"{resource.table}.{field} is declared but has no column"
    assert column["type"] == marker_of(resource, field).column_type, f"{field}: column type"
    nullable = is_nullable(resource, field)
    assert column["not_null"] is not nullable, f"{field}: NOT NULL differs from the declaration"
    rows = await connection.fetch(UNIQUE_COLUMNS, resource.table)
    unique = {row["attname"]: row["conname"] for row in rows}
    if is_unique_field(resource, field):
        assert unique.get(field) == f"{resource.table}_{field}_key"
    else:
        assert field not in unique, f"{field} is unique in the table but not declared Unique()"


@pytest.mark.parametrize(
    ("resource", "field"), FIELDS, ids=[f"{resource.table}-{field}" for resource, field in FIELDS]
)
async def test_a_field_marked_filterable_or_sortable_has_its_index_on_field_and_id(
    connection: asyncpg.Connection, resource: Resource, field: str
) -> None:
    indexes = {
        row["name"]: row["definition"] for row in await connection.fetch(INDEXES, resource.table)
    }
    name = f"{resource.table}_{field}_id_idx"
    metadata = resource.fields.model_fields[field].metadata
    if is_filterable(metadata) or is_sortable(metadata):
        assert name in indexes, f"{field} is marked but its index (a migration) is missing"
        # As PostgreSQL writes the column: a key word it does not reserve (row, values) quoted.
        column = await connection.fetchval("SELECT quote_ident($1)", field)
        assert indexes[name].endswith(f"btree ({column}, id)"), indexes[name]
    else:
        assert name not in indexes, f"{name} exists but {field} is not marked :filter or :sort"


@pytest.mark.parametrize(
    ("resource", "statement"),
    STATEMENTS,
    ids=[f"{resource.table}-{statement}" for resource, statement in STATEMENTS],
)
async def test_every_statement_of_the_resource_prepares_on_the_migrated_table(
    connection: asyncpg.Connection, resource: Resource, statement: str
) -> None:
    await connection.prepare(_statements(resource)[statement])


def _output_model_fields(resource: Resource) -> set[str]:
    (create,) = [
        route
        for route in resource.router.routes
        if isinstance(route, APIRoute) and "POST" in (route.methods or ())
    ]
    assert create.response_model is not None
    return set(create.response_model.model_fields)


@pytest.mark.parametrize("resource", RESOURCES, ids=[resource.table for resource in RESOURCES])
async def test_a_row_is_answered_with_exactly_the_output_models_fields(
    client: httpx.AsyncClient, resource: Resource
) -> None:
    response = await client.post(resource.prefix, json=new_body(resource))
    assert response.status_code == 201, response.text
    expected = _output_model_fields(resource)
    assert set(response.json()) == expected
    fetched = await client.get(response.headers["location"])
    assert set(fetched.json()) == expected
    page = (await client.get(resource.prefix, params={"limit": 1})).json()
    assert [set(row) for row in page["data"]] == [expected]
{%- if cookiecutter.jobs == "postgres" %}


async def test_the_job_queues_migrated_schema_is_what_the_installed_pgqueuer_declares(
    connection: asyncpg.Connection,
) -> None:
    """migrations/machinery/0002_job_queue.py against pgqueuer's own schema plan: a pgqueuer
    release that changes its schema shows here as the statements a new migration must run."""
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    plan = await Queries(AsyncpgDriver(connection)).plan_upgrade()
    assert list(plan.statements) == []
{%- endif %}
