"""schemas.py: what a request may say, field by field; the answer to anything else is a 422
naming the field, and the OpenAPI document states the same rules."""

from typing import Any

import httpx
import pytest

from ..conftest import BASE, assert_problem, create


@pytest.mark.parametrize("bad_id", ["0", "-1", "abc", "1.5", "9223372036854775808"])
async def test_get_with_an_invalid_id_returns_422_naming_it(
    client: httpx.AsyncClient, bad_id: str
) -> None:
    body = assert_problem(await client.get(f"{BASE}/{bad_id}"), 422)
    assert body["errors"][0]["field"] == "{{ cookiecutter.resource }}_id"


@pytest.mark.parametrize(
    "spelling", ["{id}.0", "+{id}", "%20{id}", "{id}%20", "0{id}", "{id}_0", "%D9%A1"]
)
async def test_an_id_in_any_spelling_but_canonical_decimal_is_422_not_the_same_{{ cookiecutter.resource }}(
    client: httpx.AsyncClient, spelling: str
) -> None:
    created = await create(client)
    assert (await client.get(f"{BASE}/{created['id']}")).status_code == 200
    body = assert_problem(await client.get(f"{BASE}/" + spelling.format(id=created["id"])), 422)
    assert body["errors"][0]["field"] == "{{ cookiecutter.resource }}_id"
    assert "ASCII digits" in body["errors"][0]["message"]


@pytest.mark.parametrize(
    "query",
    ["limit=1_0", "limit=+5", "limit=05", "limit=%205", "limit=5.0", "after=0_1", "after=-0"],
)
async def test_paging_numbers_in_any_spelling_but_canonical_decimal_are_422(
    client: httpx.AsyncClient, query: str
) -> None:
    body = assert_problem(await client.get(f"{BASE}?{query}"), 422)
    assert body["errors"][0]["field"] == query.split("=")[0]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"price_cents": 1}, "name"),
        ({"name": "x"}, "price_cents"),
        ({"name": "", "price_cents": 1}, "name"),
        ({"name": "x" * 201, "price_cents": 1}, "name"),
        ({"name": "x", "price_cents": -1}, "price_cents"),
        ({"name": "x", "price_cents": "12"}, "price_cents"),
        ({"name": "x", "price_cents": 1.5}, "price_cents"),
        ({"name": "x", "price_cents": 2**63}, "price_cents"),
        ({"name": "x", "price_cents": 1, "quantity": -1}, "quantity"),
        ({"name": "x", "price_cents": 1, "description": "d" * 2001}, "description"),
        ({"name": "x", "price_cents": 1, "colour": "red"}, "colour"),
        ({"name": "x", "price_cents": 1, "id": 5}, "id"),
        ({"name": "a\x00b", "price_cents": 1}, "name"),
    ],
)
async def test_create_rejects_bad_fields_with_422_naming_each(
    client: httpx.AsyncClient, payload: dict[str, Any], field: str
) -> None:
    body = assert_problem(await client.post(BASE, json=payload), 422)
    assert field in [error["field"] for error in body["errors"]]
    assert all(error["location"][0] == "body" for error in body["errors"])


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"after": -1}, "after"),
    ],
)
async def test_list_rejects_bad_paging_with_422(
    client: httpx.AsyncClient, params: dict[str, Any], field: str
) -> None:
    body = assert_problem(await client.get(BASE, params=params), 422)
    assert body["errors"][0]["field"] == field
    assert body["errors"][0]["location"] == ["query", field]


@pytest.mark.parametrize(
    ("payload", "field"),
    [({"name": None}, "body"), ({"price_cents": -5}, "price_cents"), ({"version": 7}, "version")],
)
async def test_patch_rejects_bad_fields_with_422(
    client: httpx.AsyncClient, payload: dict[str, Any], field: str
) -> None:
    created = await create(client)
    body = assert_problem(await client.patch(f"{BASE}/{created['id']}", json=payload), 422)
    assert field in {error["field"] for error in body["errors"]} | {"body"}
    stored = (await client.get(f"{BASE}/{created['id']}")).json()
    assert stored == created


async def test_patch_with_no_field_is_422_and_changes_nothing(client: httpx.AsyncClient) -> None:
    created = await create(client)
    body = assert_problem(await client.patch(f"{BASE}/{created['id']}", json={}), 422)
    assert body["errors"][0]["field"] == "body"
    assert "no field to change" in body["errors"][0]["message"]
    assert (await client.get(f"{BASE}/{created['id']}")).json() == created


async def test_integral_numbers_written_with_a_fraction_are_accepted_as_integers(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        BASE,
        content=b'{"name": "x", "price_cents": 4466.0, "quantity": 2.0}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 201, response.text
    assert (response.json()["price_cents"], response.json()["quantity"]) == (4466, 2)
    patched = await client.patch(
        response.headers["location"],
        content=b'{"quantity": 7.0}',
        headers={"content-type": "application/json"},
    )
    assert patched.json()["quantity"] == 7


async def test_openapi_document_states_exactly_what_is_accepted(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    components = schema["components"]["schemas"]
    update = components["{{ cookiecutter.__resource_class }}Update"]
    assert update["minProperties"] == 1
    assert all(
        "anyOf" not in update["properties"][name] for name in ("name", "price_cents", "quantity")
    )
    price = components["{{ cookiecutter.__resource_class }}Create"]["properties"]["price_cents"]
    assert (price["minimum"], price["maximum"]) == (0, 2**63 - 1)
    assert isinstance(price["maximum"], int)
    for path in schema["paths"].values():
        for operation in path.values():
            for parameter in operation.get("parameters", []):
                assert "anyOf" not in parameter["schema"], (
                    parameter
                )  # optional = absent, never "null"
    by_id = schema["paths"][BASE + "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}"]["get"]["parameters"][0]
    assert by_id["schema"]["pattern"] == "^[1-9][0-9]{0,18}$"
