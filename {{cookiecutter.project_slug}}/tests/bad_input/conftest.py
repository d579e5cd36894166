"""The row each table's hostile requests aim at."""

import httpx
import pytest

from ..conftest import BASE


@pytest.fixture(scope="module")
async def existing_id(client: httpx.AsyncClient) -> int:
    created = await client.post(BASE, json={"name": "target of hostile patches", "price_cents": 1})
    assert created.status_code == 201
    return int(created.json()["id"])
