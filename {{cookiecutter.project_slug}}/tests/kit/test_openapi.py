"""openapi.py and the document FastAPI builds from the routes: every route in it, the docs page
served."""

import httpx


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
