"""The load test's requests and seed rows derived from a declaration: a field of every kind gets
a value its declaration accepts, varying where the type allows, unique where it must be."""

import json
import random
import secrets
from datetime import date, datetime
from typing import Annotated, Literal
from uuid import UUID

import asyncpg
import pytest
from fastapi import APIRouter
from loadtest.plan.declared import (
    create_body,
    filtered_query,
    fresh_creates,
    patch_body,
    seed_rows,
    value_template,
)
from loadtest.plan.operations import UNIQUE_RANGE, parts, render
from loadtest.plan.scenarios import operations_of, scenarios_of
from pydantic import create_model

from {{ cookiecutter.package_name }}.kit import (
    BigInt,
    Bool,
    Date,
    Declared,
    Filterable,
    Int,
    Money,
    OneOf,
    Resource,
    Sortable,
    Str,
    Text,
    Timestamp,
    Unique,
    Uuid,
    field_type,
    is_unique,
)


class EveryKind(Declared):
    code: Annotated[str, Str(max_length=40), Unique()]
    tag: Annotated[str, Str(max_length=4)]
    note: Annotated[str | None, Text(max_length=500)] = None
    count: Annotated[int, Int(ge=1)]
    below: Annotated[int, Int(le=10)]
    serial: Annotated[int, BigInt(), Unique()]
    narrow: Annotated[int, Int(ge=3, le=7)]
    price: Annotated[int, Money()]
    flag: Annotated[bool, Bool()]
    due: Annotated[date | None, Date()] = None
    at: Annotated[datetime, Timestamp()]
    ref: Annotated[UUID, Uuid(), Unique()]
    kind: Annotated[Literal["retail", "wholesale"], OneOf()] = "retail"


class OnlyUnique(Declared):
    code: Annotated[str, Str(max_length=40), Unique()]


EVERY_KIND = Resource(APIRouter(prefix="/things"), "things", EveryKind)


class Marked(Declared):
    price: Annotated[int, Money(), Filterable()]
    at: Annotated[datetime | None, Timestamp(), Sortable()] = None
    kind: Annotated[Literal["retail", "wholesale"], OneOf(), Filterable()] = "retail"


def test_the_filtered_page_filters_on_a_marked_enum_or_number_and_sorts_by_a_marked_field() -> None:
    marked = Resource(APIRouter(prefix="/things"), "things", Marked)
    # The enum first (most seeded rows have its first value), else a range from the seed's lowest.
    assert filtered_query(marked) == "limit=20&kind=retail&sort=-at"
    unsorted = Resource(
        APIRouter(prefix="/things"),
        "things",
        create_model(
            "Priced", __base__=Declared, price=(Annotated[int, Money(ge=5), Filterable()], ...)
        ),
    )
    assert filtered_query(unsorted) == "limit=20&price.gte=5"
    assert filtered_query(EVERY_KIND) is None  # nothing marked: no filtered scenario


def _rendered(template: str, rng: random.Random) -> str:
    def value(name: str) -> int:
        return rng.randrange(*UNIQUE_RANGE) if name == "u" else rng.randrange(10**6)

    return render(parts(template), value)


def test_a_create_body_of_every_kind_is_accepted_by_its_declaration() -> None:
    rng = random.Random(2)
    for _ in range(500):
        body = json.loads(_rendered(create_body(EVERY_KIND), rng))
        assert list(body) == list(EveryKind.model_fields)
        EveryKind.model_validate(body)


def test_a_unique_fields_value_differs_from_request_to_request() -> None:
    rng = random.Random(3)
    bodies = [json.loads(_rendered(create_body(EVERY_KIND), rng)) for _ in range(2000)]
    for name in ("code", "serial", "ref"):
        assert len({body[name] for body in bodies}) == len(bodies), name


def test_a_value_no_placeholder_fits_is_the_fields_example() -> None:
    assert value_template(EVERY_KIND, "tag") == '"exam"'  # four characters: no room for {n}
    assert value_template(EVERY_KIND, "narrow") == "3"
    assert value_template(EVERY_KIND, "count") == "1{n}"
    assert value_template(EVERY_KIND, "below") == "-{n}"
    assert value_template(EVERY_KIND, "kind") == '"retail"'


class ShortUnique(Declared):
    code: Annotated[str, Str(max_length=8), Unique()]
    title: Annotated[str, Str(max_length=200)]


def test_a_unique_field_without_room_for_fresh_values_leaves_creates_out() -> None:
    """Eight characters cannot hold the 12 digits of `{u}`: every create would send one value,
    and all but the first would be 409s, measured as if they were the service's answers."""
    short = Resource(APIRouter(prefix="/codes"), "codes", ShortUnique)
    assert not fresh_creates(short)
    assert fresh_creates(EVERY_KIND)
    assert "codes.create" not in scenarios_of(short, operations_of(short))
    assert "things.create" in scenarios_of(EVERY_KIND, operations_of(EVERY_KIND))


def test_a_patch_changes_one_field_that_is_not_unique_and_varies() -> None:
    assert list(json.loads(_rendered(patch_body(EVERY_KIND), random.Random(1)))) == ["at"]
    only_unique = Resource(APIRouter(prefix="/codes"), "codes", OnlyUnique)
    assert list(json.loads(_rendered(patch_body(only_unique), random.Random(1)))) == ["code"]


class ShortUniques(Declared):
    code: Annotated[str, Str(max_length=5), Unique()]
    day: Annotated[date | None, Date(), Unique()] = None
    word: Annotated[str, Str(max_length=6), Unique()]


def test_where_every_field_is_unique_a_patch_sends_a_fresh_value_else_null() -> None:
    """No room for `{u}` anywhere: a fixed value conflicts from the second row patched on (and
    the row it was written to keeps it, for a create of that value to meet), a null never."""
    short = Resource(APIRouter(prefix="/codes"), "codes", ShortUniques)
    assert json.loads(patch_body(short)) == {"day": None}
    only_unique = Resource(APIRouter(prefix="/codes"), "codes", OnlyUnique)
    assert "{u}" in patch_body(only_unique)


def test_a_seed_statement_names_every_column_and_a_value_for_each() -> None:
    statement = seed_rows(EVERY_KIND)
    columns = ", ".join(EveryKind.model_fields)
    assert statement.startswith(f"INSERT INTO things ({columns})\n    SELECT ")
    assert statement.count(",\n           ") == len(EveryKind.model_fields) - 1
    assert "(ARRAY['retail', 'wholesale'])[1 + g % 2]" in statement
    assert "0 + g," in statement  # the unique bigint: distinct per row


def test_a_field_declared_without_a_kit_type_is_named() -> None:
    class Untyped(Declared):
        plain: int

    with pytest.raises(ValueError, match=r"things\.plain"):
        value_template(Resource(APIRouter(prefix="/things"), "things", Untyped), "plain")


async def test_the_seed_statement_fills_a_table_of_the_declared_column_types(
    database_url: str,
) -> None:
    """Into a table made from the markers' column types, unique constraints included: rows
    numbered from $1 to $2, twice over without a conflict."""
    table = f"seeded_{secrets.token_hex(4)}"
    columns = []
    for name, info in EveryKind.model_fields.items():
        marker = field_type(info.metadata)
        assert marker is not None
        unique = " UNIQUE" if is_unique(info.metadata) else ""
        columns.append(f"{name} {marker.column_type} NOT NULL{unique}")
    resource = Resource(APIRouter(prefix="/things"), table, EveryKind)
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(f"CREATE TABLE {table} ({', '.join(columns)})")
        await connection.execute(seed_rows(resource), 1, 300)
        await connection.execute(seed_rows(resource), 301, 500)
        assert await connection.fetchval(f"SELECT count(DISTINCT code) FROM {table}") == 500
        assert (
            await connection.fetchval(
                f"SELECT count(*) FROM {table} WHERE narrow NOT BETWEEN 3 AND 7"
            )
            == 0
        )
        assert await connection.fetchval(f"SELECT count(*) FROM {table} WHERE length(tag) > 4") == 0
    finally:
        await connection.execute(f"DROP TABLE IF EXISTS {table}")
        await connection.close()
