import httpx


async def test_healthz_answers_200(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_answers_200_when_the_database_answers(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200


async def test_openapi_documents_every_route(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert set(schema["paths"]) >= {
        "/healthz",
        "/readyz",
        "/{{ cookiecutter.resource_plural }}",
        "/{{ cookiecutter.resource_plural }}/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}",
    }
    get_one = schema["paths"]["/{{ cookiecutter.resource_plural }}/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}"]["get"]
    ok_schema = get_one["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok_schema == {"$ref": "#/components/schemas/{{ cookiecutter.__resource_class }}"}


async def test_docs_page_is_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()


async def test_unknown_route_is_a_problem_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/no-such-route")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 404


async def test_wrong_method_is_a_problem_405(client: httpx.AsyncClient) -> None:
    response = await client.put("/{{ cookiecutter.resource_plural }}")
    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"
