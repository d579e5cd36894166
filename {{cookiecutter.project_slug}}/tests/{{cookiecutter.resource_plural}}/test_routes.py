"""routes.py: the {{ cookiecutter.resource_plural }} contract, end to end through the ASGI app on a real
PostgreSQL."""

from datetime import datetime

import httpx

from ..conftest import BASE, assert_problem, create


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


async def test_a_trailing_slash_is_404_never_a_redirect_built_from_host(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    for path in (f"{BASE}/{created['id']}/", f"{BASE}/"):
        response = await client.get(path, headers={"host": "evil.example"})
        assert response.status_code == 404, path
        assert "location" not in response.headers


async def test_list_operation_documents_the_keyset_guarantee_and_its_limit(
    client: httpx.AsyncClient,
) -> None:
    operation = (await client.get("/openapi.json")).json()["paths"][BASE]["get"]
    assert "exactly once" in operation["description"]
    assert "skipped" in operation["description"]


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


async def test_delete_returns_204_then_the_{{ cookiecutter.resource }}_is_gone(client: httpx.AsyncClient) -> None:
    created = await create(client)
    response = await client.delete(f"{BASE}/{created['id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert_problem(await client.get(f"{BASE}/{created['id']}"), 404)
    assert_problem(await client.delete(f"{BASE}/{created['id']}"), 404)
