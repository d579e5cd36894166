"""The row each table's hostile requests aim at."""

import httpx
import pytest

from ..conftest import BASE
from ..declared import new_body


@pytest.fixture(scope="module")
async def existing_id(client: httpx.AsyncClient) -> int:
    created = await client.post(BASE, json=new_body())
    assert created.status_code == 201
    return int(created.json()["id"])
