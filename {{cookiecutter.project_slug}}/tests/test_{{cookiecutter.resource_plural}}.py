"""The {{ cookiecutter.resource_plural }} contract, end to end through the ASGI app on a real PostgreSQL."""

import asyncio
from datetime import datetime
from typing import Any

import asyncpg
import httpx
import pytest

BASE = "/{{ cookiecutter.resource_plural }}"
PROBLEM = "application/problem+json"


async def create(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await client.post(BASE, json={"name": "widget", "price_cents": 100, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert {"type", "title", "status", "detail"} <= body.keys()
    assert body["status"] == status
    return body


async def test_create_returns_201_with_location_and_the_stored_fields(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        BASE, json={"name": "Lamp", "description": "brass", "price_cents": 4200, "quantity": 3}
    )
    assert response.status_code == 201
    body = response.json()
    assert response.headers["location"] == f"{BASE}/{body['id']}"
    assert response.headers["etag"] == '"1"'
    assert body["name"] == "Lamp"
    assert body["description"] == "brass"
    assert body["price_cents"] == 4200
    assert body["quantity"] == 3
    assert body["version"] == 1
    assert datetime.fromisoformat(body["created_at"]).tzinfo is not None
    assert body["created_at"] == body["updated_at"]


async def test_create_defaults_quantity_to_zero_and_description_to_null(
    client: httpx.AsyncClient,
) -> None:
    body = await create(client)
    assert body["quantity"] == 0
    assert body["description"] is None


async def test_get_returns_the_{{ cookiecutter.resource }}_with_an_etag(client: httpx.AsyncClient) -> None:
    created = await create(client, name="Chair")
    response = await client.get(f"{BASE}/{created['id']}")
    assert response.status_code == 200
    assert response.json() == created
    assert response.headers["etag"] == '"1"'


async def test_get_missing_{{ cookiecutter.resource }}_returns_404(client: httpx.AsyncClient) -> None:
    body = assert_problem(await client.get(f"{BASE}/999999999"), 404)
    assert "999999999" in body["detail"]


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


async def test_a_trailing_slash_is_404_never_a_redirect_built_from_host(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    for path in (f"{BASE}/{created['id']}/", f"{BASE}/"):
        response = await client.get(path, headers={"host": "evil.example"})
        assert response.status_code == 404, path
        assert "location" not in response.headers


@pytest.mark.parametrize(
    ("path", "allowed"),
    [(BASE + "/1", {"GET", "PATCH", "DELETE"}), (BASE, {"GET", "POST"}), ("/healthz", {"GET"})],
)
async def test_an_unsupported_method_is_405_with_allow_naming_every_method(
    client: httpx.AsyncClient, path: str, allowed: set[str]
) -> None:
    response = await client.put(path)
    assert_problem(response, 405)
    methods = {method.strip() for method in response.headers["allow"].split(",")}
    # HEAD is listed wherever GET is served: the routes answer it.
    assert methods - {"HEAD"} == allowed


async def test_list_operation_documents_the_keyset_guarantee_and_its_limit(
    client: httpx.AsyncClient,
) -> None:
    operation = (await client.get("/openapi.json")).json()["paths"][BASE]["get"]
    assert "exactly once" in operation["description"]
    assert "skipped" in operation["description"]


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


async def test_create_with_malformed_json_returns_400(client: httpx.AsyncClient) -> None:
    response = await client.post(
        BASE, content=b'{"name": "x",', headers={"content-type": "application/json"}
    )
    assert_problem(response, 400)


async def test_list_pages_by_id_with_next_after(client: httpx.AsyncClient) -> None:
    ids = [(await create(client, name=f"page {n}"))["id"] for n in range(5)]
    start = ids[0] - 1
    first = (await client.get(BASE, params={"limit": 2, "after": start})).json()
    assert [row["id"] for row in first["data"]] == ids[:2]
    assert first["next_after"] == ids[1]
    second = (await client.get(BASE, params={"limit": 2, "after": first["next_after"]})).json()
    assert [row["id"] for row in second["data"]] == ids[2:4]
    last = (await client.get(BASE, params={"limit": 500, "after": ids[3]})).json()
    assert last["data"][0]["id"] == ids[4]
    assert last["next_after"] is None


async def test_list_defaults_to_20_rows(client: httpx.AsyncClient) -> None:
    for n in range(21):
        await create(client, name=f"bulk {n}")
    page = (await client.get(BASE)).json()
    assert len(page["data"]) == 20
    assert page["next_after"] == page["data"][-1]["id"]


async def test_list_after_the_last_id_is_empty(client: httpx.AsyncClient) -> None:
    page = (await client.get(BASE, params={"after": 2**63 - 1})).json()
    assert page == {"data": [], "next_after": None}


async def test_list_with_limit_exactly_filling_the_table_end_has_no_next(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    page = (await client.get(BASE, params={"after": created["id"] - 1, "limit": 1})).json()
    assert [row["id"] for row in page["data"]] == [created["id"]]
    assert page["next_after"] is None


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


async def test_patch_changes_only_the_fields_sent_and_bumps_the_version(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client, name="Desk", description="oak", quantity=2)
    response = await client.patch(f"{BASE}/{created['id']}", json={"price_cents": 999})
    assert response.status_code == 200
    body = response.json()
    assert body["price_cents"] == 999
    assert (body["name"], body["description"], body["quantity"]) == ("Desk", "oak", 2)
    assert body["version"] == 2
    assert response.headers["etag"] == '"2"'
    assert body["updated_at"] > created["updated_at"]
    assert body["created_at"] == created["created_at"]


async def test_patch_can_clear_the_description(client: httpx.AsyncClient) -> None:
    created = await create(client, description="to be removed")
    body = (await client.patch(f"{BASE}/{created['id']}", json={"description": None})).json()
    assert body["description"] is None


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


async def test_a_version_past_integer_range_can_still_be_updated(
    client: httpx.AsyncClient, database_url: str
) -> None:
    created = await create(client)
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE {{ cookiecutter.resource_plural }} SET version = 2147483647 WHERE id = $1", created["id"]
        )
    finally:
        await connection.close()
    response = await client.patch(
        f"{BASE}/{created['id']}", json={"quantity": 1}, headers={"if-match": '"2147483647"'}
    )
    assert response.status_code == 200, response.text
    assert response.json()["version"] == 2147483648
    assert response.headers["etag"] == '"2147483648"'


async def test_patch_missing_{{ cookiecutter.resource }}_returns_404(client: httpx.AsyncClient) -> None:
    assert_problem(await client.patch(f"{BASE}/999999999", json={"quantity": 1}), 404)


async def test_patch_with_current_if_match_succeeds(client: httpx.AsyncClient) -> None:
    created = await create(client)
    response = await client.patch(
        f"{BASE}/{created['id']}", json={"quantity": 7}, headers={"if-match": '"1"'}
    )
    assert response.status_code == 200
    assert response.json()["quantity"] == 7


async def test_patch_with_stale_if_match_returns_412_and_changes_nothing(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    await client.patch(f"{BASE}/{created['id']}", json={"quantity": 1})
    response = await client.patch(
        f"{BASE}/{created['id']}", json={"quantity": 99}, headers={"if-match": '"1"'}
    )
    assert_problem(response, 412)
    assert (await client.get(f"{BASE}/{created['id']}")).json()["quantity"] == 1


@pytest.mark.parametrize("header", ["1", '"1', "W/1", "null", '*, "1"'])
async def test_patch_with_malformed_if_match_returns_400(
    client: httpx.AsyncClient, header: str
) -> None:
    created = await create(client)
    response = await client.patch(
        f"{BASE}/{created['id']}", json={"quantity": 1}, headers={"if-match": header}
    )
    assert_problem(response, 400)


async def test_concurrent_patches_with_the_same_if_match_let_exactly_one_win(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    responses = await asyncio.gather(
        *(
            client.patch(
                f"{BASE}/{created['id']}", json={"quantity": n}, headers={"if-match": '"1"'}
            )
            for n in range(8)
        )
    )
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200] + [412] * 7
    winner = next(response.json() for response in responses if response.status_code == 200)
    stored = (await client.get(f"{BASE}/{created['id']}")).json()
    assert stored == winner
    assert stored["version"] == 2


async def test_delete_returns_204_then_the_{{ cookiecutter.resource }}_is_gone(client: httpx.AsyncClient) -> None:
    created = await create(client)
    response = await client.delete(f"{BASE}/{created['id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert_problem(await client.get(f"{BASE}/{created['id']}"), 404)
    assert_problem(await client.delete(f"{BASE}/{created['id']}"), 404)


async def test_sql_injection_text_is_stored_verbatim(client: httpx.AsyncClient) -> None:
    name = "x'); DROP TABLE {{ cookiecutter.resource_plural }}; --"
    created = await create(client, name=name)
    assert (await client.get(f"{BASE}/{created['id']}")).json()["name"] == name


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
