"""health/routes.py: /healthz answers while the process runs, /readyz while the database answers."""

import httpx


async def test_healthz_answers_200(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_answers_200_when_the_database_answers(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200
