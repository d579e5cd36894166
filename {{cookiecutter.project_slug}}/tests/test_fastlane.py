"""The fast lane answers exactly what the FastAPI routes answer, and hands them everything else."""

from typing import Any

import httpx
from fastapi import FastAPI

BASE = "/{{ cookiecutter.resource_plural }}"


def _comparable(response: httpx.Response) -> tuple[int, Any, dict[str, str]]:
    headers = {
        name: value
        for name, value in response.headers.items()
        if name not in {"x-request-id", "content-length", "date"}
    }
    return response.status_code, response.json(), headers


async def test_get_by_id_matches_the_route(client: httpx.AsyncClient) -> None:
    created = (await client.post(BASE, json={"name": "lane", "price_cents": 1})).json()
    fast = await client.get(f"{BASE}/{created['id']}")
    # A leading zero is a valid id for the route but not for the fast lane: the route answers.
    routed = await client.get(f"{BASE}/0{created['id']}")
    assert _comparable(fast) == _comparable(routed)
    assert fast.json() == created


async def test_page_matches_the_route(client: httpx.AsyncClient) -> None:
    first = (await client.post(BASE, json={"name": "a", "price_cents": 1})).json()
    await client.post(BASE, json={"name": "b", "price_cents": 2})
    after = first["id"] - 1
    fast = await client.get(BASE, params={"limit": 2, "after": after})
    # An unknown query parameter is ignored by the route and declined by the fast lane.
    routed = await client.get(BASE, params={"limit": 2, "after": after, "unused": 1})
    assert _comparable(fast) == _comparable(routed)
    assert len(fast.json()["data"]) == 2


async def test_create_matches_the_route(client: httpx.AsyncClient) -> None:
    payload = {"name": "same", "description": "both lanes", "price_cents": 7, "quantity": 2}
    fast = await client.post(BASE, json=payload)
    # A charset parameter is JSON for the route, but not a type the fast lane accepts.
    routed = await client.post(
        BASE,
        content=httpx.Request("POST", "/", json=payload).content,
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert fast.status_code == routed.status_code == 201
    assert fast.headers["location"] == f"{BASE}/{fast.json()['id']}"
    assert fast.headers["etag"] == routed.headers["etag"] == '"1"'
    strip = {"id", "created_at", "updated_at"}
    fast_body = {key: value for key, value in fast.json().items() if key not in strip}
    routed_body = {key: value for key, value in routed.json().items() if key not in strip}
    assert fast_body == routed_body


async def test_invalid_create_body_is_answered_by_the_route(client: httpx.AsyncClient) -> None:
    response = await client.post(BASE, json={"name": "", "price_cents": 1, "colour": "red"})
    assert response.status_code == 422
    assert {error["field"] for error in response.json()["errors"]} == {"name", "colour"}


async def test_missing_row_is_answered_by_the_route(client: httpx.AsyncClient) -> None:
    response = await client.get(f"{BASE}/{2**62}")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


async def test_fast_lane_labels_metrics_with_the_route_template(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    created = (await client.post(BASE, json={"name": "metric", "price_cents": 1})).json()
    await client.get(f"{BASE}/{created['id']}")
    exposition = (await client.get("/metrics")).text
    template = 'route="' + BASE + "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}" + '"'
    assert any(template in line and 'method="GET"' in line for line in exposition.splitlines())
    assert f'/{created["id"]}"' not in exposition
