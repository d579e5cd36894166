"""The scenario table: the scenarios of every resource of the service, each a weighted mix of its
operations, each request derived from the resource's declaration and accepted by the service."""

import asyncio
import json
import random

import asyncpg
import httpx
import pytest
from loadtest import project
from loadtest.drive import service
from loadtest.plan.budget import load
from loadtest.plan.declared import filtered_query, fresh_creates, plural, seed_rows
from loadtest.plan.operations import UNIQUE_RANGE, fixed, parts, render
from loadtest.plan.scenarios import (
    BY_NAME,
    KINDS,
    OPERATIONS,
    SCENARIOS,
    kind_of,
    resource_of,
    resources_in,
    to_run,
)

from {{ cookiecutter.package_name }}.kit import Resource, is_unique
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES

from ...declared import first_resource

FIRST = plural(first_resource())


def _value(name: str) -> int:
    return random.randrange(*UNIQUE_RANGE) if name == "u" else random.randrange(10**6)


def _body(template: str | None) -> dict[str, object]:
    assert template is not None
    body = json.loads(render(parts(template), _value))
    assert isinstance(body, dict)
    return body


def test_every_resource_has_each_scenario_and_the_budget_judges_every_scenario() -> None:
    budget = load(project.BUDGET)
    assert list(BY_NAME) == [plural(resource) for resource in RESOURCES]
    assert list(SCENARIOS) == [
        f"{name}.{kind}"
        for name in BY_NAME
        for kind in KINDS
        # a filtered page: only for a resource with a field marked :filter or :sort; creates:
        # only where each writes fresh values into the unique fields
        if kind != "filtered" or filtered_query(BY_NAME[name]) is not None
        if kind != "create" or fresh_creates(BY_NAME[name])
    ]
    assert to_run(None, budget) == list(SCENARIOS)
    assert set(budget.scenarios) == set(KINDS)
    for name, mix in SCENARIOS.items():
        assert all(OPERATIONS[op.name] is op and weight > 0 for op, weight in mix)
        assert {op.name.rpartition(".")[0] for op, _ in mix} == {name.rpartition(".")[0]}


def test_each_resources_mixed_scenario_is_80_percent_reads_by_id_and_20_percent_patches() -> None:
    for name in BY_NAME:
        weights = {op.name: weight for op, weight in SCENARIOS[f"{name}.mixed"]}
        assert weights == {f"{name}.by_id": 80, f"{name}.patch": 20}


def test_a_scenario_names_its_resource_and_the_operation_its_budget_is_kept_under() -> None:
    assert kind_of("line_items.by_id") == "by_id"
    names = [f"{FIRST}.by_id", f"{FIRST}.mixed", "other_things.page"]
    assert resources_in(names) == [FIRST, "other_things"]


def test_a_template_splits_into_text_and_placeholders_and_renders_back() -> None:
    prefix = first_resource().prefix
    split = parts(OPERATIONS[f"{FIRST}.page"].path)
    assert split == [f"{prefix}?limit=20&after=", "id", ""]
    assert render(split, lambda name: 42) == f"{prefix}?limit=20&after=42"


def test_a_route_names_the_path_without_its_values() -> None:
    prefix = first_resource().prefix
    assert OPERATIONS[f"{FIRST}.by_id"].route == "GET " + prefix + "/{id}"
    assert OPERATIONS[f"{FIRST}.page"].route == f"GET {prefix}?limit&after"
    assert OPERATIONS[f"{FIRST}.create"].route == f"POST {prefix}"
    assert fixed("/healthz")[0][0].route == "GET /healthz"


def test_only_the_deletes_consume_their_ids_and_each_id_is_drawn_from_its_own_resource() -> None:
    deletes = [name for name, operation in OPERATIONS.items() if operation.consumes_id]
    assert deletes == [f"{name}.delete" for name in BY_NAME]
    for name, operation in OPERATIONS.items():
        assert operation.resource == ("" if "{id}" not in operation.path else resource_of(name))


@pytest.mark.parametrize("resource", RESOURCES, ids=plural)
def test_a_create_sends_every_declared_field_and_a_patch_one_field_that_is_not_unique(
    resource: Resource,
) -> None:
    name = plural(resource)
    fields = resource.fields.model_fields
    assert list(_body(OPERATIONS[f"{name}.create"].body)) == list(fields)
    (changed,) = _body(OPERATIONS[f"{name}.patch"].body)
    assert not is_unique(fields[changed].metadata) or all(
        is_unique(info.metadata) for info in fields.values()
    )


@pytest.mark.parametrize("resource", RESOURCES, ids=plural)
async def test_the_service_accepts_each_resources_creates_and_patches_as_the_table_writes_them(
    resource: Resource, client: httpx.AsyncClient
) -> None:
    name = plural(resource)
    create, patch = OPERATIONS[f"{name}.create"], OPERATIONS[f"{name}.patch"]
    # Unique fields take a fresh value each time, where a create has room for one; else the
    # create is no scenario, and only its first is a success.
    for _ in range(3 if fresh_creates(resource) else 1):
        created = await client.post(create.path, json=_body(create.body))
        assert created.status_code == create.status, created.text
        row: int = created.json()["id"]
        target = render(parts(patch.path), {"id": row}.__getitem__)
        try:
            patched = await client.patch(target, json=_body(patch.body))
            assert patched.status_code == patch.status, patched.text
        finally:
            # The row may hold a fixed value in a unique field (a date is written as the
            # example): left behind, another test sending that value would meet a 409.
            assert (await client.delete(target)).status_code == 204


async def test_the_seed_fills_each_table_once_with_rows_the_service_reads(
    database_url: str, client: httpx.AsyncClient
) -> None:
    names = list(BY_NAME)
    ids = await asyncio.to_thread(service.seed, database_url, 30, names)
    assert [len(ids[name]) for name in names] == [30] * len(names)
    again = await asyncio.to_thread(service.seed, database_url, 30, names)
    assert again == ids  # a second run inserts nothing
    # Unique values stay unique as the table grows: the next rows are numbered after the count.
    more = await asyncio.to_thread(service.seed, database_url, 45, names)
    assert all(more[name][:30] == ids[name] and len(more[name]) == 45 for name in names)
    for name in names:
        for row in (more[name][0], more[name][-1]):
            response = await client.get(f"{BY_NAME[name].prefix}/{row}")
            assert response.status_code == 200, response.text
            assert set(BY_NAME[name].fields.model_fields) <= set(response.json())


@pytest.mark.parametrize("resource", RESOURCES, ids=plural)
def test_the_seed_statement_numbers_its_rows_from_the_first_parameter(resource: Resource) -> None:
    statement = seed_rows(resource)
    assert statement.startswith(f"INSERT INTO {resource.table} (")
    assert "generate_series($1::integer, $2::integer) AS g" in statement


async def test_settling_vacuums_and_analyzes_every_table_before_the_next_scenario(
    database_url: str,
) -> None:
    names = list(BY_NAME)
    await asyncio.to_thread(service.seed, database_url, 30, names)
    counts = "SELECT vacuum_count, analyze_count FROM pg_stat_user_tables WHERE relname = $1"
    connection = await asyncpg.connect(database_url)
    try:
        tables = [BY_NAME[name].table for name in names]
        before = [tuple(await connection.fetchrow(counts, table) or ()) for table in tables]
        await asyncio.to_thread(service.settle, database_url, names)
        after = [tuple(await connection.fetchrow(counts, table) or ()) for table in tables]
        for table, (vacuums, analyzes), (vacuumed, analyzed) in zip(
            tables, before, after, strict=True
        ):
            assert vacuumed > vacuums, table
            assert analyzed > analyzes, table
    finally:
        await connection.close()
