"""openapi.py and the document FastAPI builds from the routes: every route in it, the docs page
served."""

import httpx
from fastapi.routing import APIRoute

from ..conftest import BASE, TEMPLATE
from ..declared import first_resource


async def test_openapi_documents_every_route(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert set(schema["paths"]) >= {"/healthz", "/readyz", BASE, TEMPLATE}
    get_one = schema["paths"][TEMPLATE]["get"]
    ok_schema = get_one["responses"]["200"]["content"]["application/json"]["schema"]
    route = next(
        route
        for route in first_resource().router.routes
        if isinstance(route, APIRoute) and route.path == TEMPLATE and "GET" in (route.methods or ())
    )
    assert ok_schema == {"$ref": f"#/components/schemas/{route.response_model.__name__}"}


async def test_docs_page_is_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()
