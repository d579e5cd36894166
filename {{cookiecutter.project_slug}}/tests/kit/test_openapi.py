"""openapi.py and the document FastAPI builds from the routes: every route in it, the docs page
served, and what generated clients need from it (headers as text, the ETag, the page's cursor,
operation ids)."""

from typing import Any

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


async def _document(client: httpx.AsyncClient) -> dict[str, Any]:
    document: dict[str, Any] = (await client.get("/openapi.json")).json()
    return document


async def test_conditional_headers_are_documented_as_one_string(client: httpx.AsyncClient) -> None:
    document = await _document(client)
    headers = {
        parameter["name"]: parameter["schema"]
        for operation in document["paths"][TEMPLATE].values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "header"
    }
    assert set(headers) == {"if-none-match", "if-match"}
    for schema in headers.values():
        assert schema["type"] == "string"
        assert "items" not in schema
        assert all(isinstance(example, str) for example in schema["examples"])


async def test_row_answers_and_304_document_the_etag_header(client: httpx.AsyncClient) -> None:
    paths = (await _document(client))["paths"]
    assert "ETag" in paths[BASE]["post"]["responses"]["201"]["headers"]
    assert "ETag" in paths[TEMPLATE]["get"]["responses"]["200"]["headers"]
    assert "ETag" in paths[TEMPLATE]["get"]["responses"]["304"]["headers"]
    assert "ETag" in paths[TEMPLATE]["patch"]["responses"]["200"]["headers"]
    # A page is no row: it has no ETag of its own.
    assert "headers" not in paths[BASE]["get"]["responses"]["200"]


async def test_every_page_has_its_next_cursor(client: httpx.AsyncClient) -> None:
    document = await _document(client)
    page = document["paths"][BASE]["get"]["responses"]["200"]["content"]["application/json"]
    name = page["schema"]["$ref"].rpartition("/")[2]
    assert "next_cursor" in document["components"]["schemas"][name]["required"]


async def test_operation_ids_are_the_route_functions_names(client: httpx.AsyncClient) -> None:
    paths = (await _document(client))["paths"]
    names = {
        route.name
        for route in first_resource().router.routes
        if isinstance(route, APIRoute) and route.path == TEMPLATE
    }
    assert {operation["operationId"] for operation in paths[TEMPLATE].values()} == names


async def test_the_list_documents_no_default_for_after(client: httpx.AsyncClient) -> None:
    # A generated client sends every documented default, and `after` beside ?sort= is a 400.
    parameters = (await _document(client))["paths"][BASE]["get"]["parameters"]
    (after,) = [parameter for parameter in parameters if parameter["name"] == "after"]
    assert "default" not in after["schema"]
    assert after["schema"]["pattern"]
