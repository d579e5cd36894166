"""repository.py and sql.py, seen through the API: text is bound as a parameter and never run as
SQL, the version check lets exactly one of concurrent writers win, versions go past int4."""

import asyncio

import httpx
import pytest

from ..conftest import BASE, count_rows, create, fetch_value


async def test_a_version_past_integer_range_can_still_be_updated(
    client: httpx.AsyncClient, database_url: str
) -> None:
    created = await create(client)
    await fetch_value(
        database_url, "UPDATE {{ cookiecutter.resource_plural }} SET version = 2147483647 WHERE id = $1", created["id"]
    )
    response = await client.patch(
        f"{BASE}/{created['id']}", json={"quantity": 1}, headers={"if-match": '"2147483647"'}
    )
    assert response.status_code == 200, response.text
    assert response.json()["version"] == 2147483648
    assert response.headers["etag"] == '"2147483648"'


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


async def test_sql_injection_text_is_stored_verbatim(client: httpx.AsyncClient) -> None:
    name = "x'); DROP TABLE {{ cookiecutter.resource_plural }}; --"
    created = await create(client, name=name)
    assert (await client.get(f"{BASE}/{created['id']}")).json()["name"] == name


@pytest.mark.parametrize(
    "text",
    [
        "'; DROP TABLE {{ cookiecutter.resource_plural }}; --",
        "1' OR '1'='1",
        "x'); DELETE FROM {{ cookiecutter.resource_plural }} WHERE ('1'='1",
        "$1 $2 \\x00 %s %d {0}",
        "Robert'); SELECT pg_sleep(10); --",
    ],
)
async def test_sql_injection_strings_are_stored_verbatim_and_never_run(
    client: httpx.AsyncClient, database_url: str, text: str
) -> None:
    before = await count_rows(database_url)
    created = await client.post(
        BASE, json={"name": text[:200], "description": text, "price_cents": 1}
    )
    assert created.status_code == 201, created.text
    fetched = (await client.get(created.headers["location"])).json()
    assert (fetched["name"], fetched["description"]) == (text[:200], text)
    assert await count_rows(database_url) == before + 1
