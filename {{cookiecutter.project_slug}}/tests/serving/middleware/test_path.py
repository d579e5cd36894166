"""The encoded-slash check (middleware/path.py), around a five-line inline app."""

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from {{ cookiecutter.package_name }}.serving.middleware.path import EncodedSlashMiddleware

from ...conftest import in_process_client


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": scope["path"].encode()})


@pytest.mark.parametrize("path", ["/items%2F1", "/items%2f1", "/a%2Fb/c", "/%2F"])
async def test_a_path_with_an_encoded_slash_is_404_before_the_app(path: str) -> None:
    async with in_process_client(EncodedSlashMiddleware(_ok)) as http:
        response = await http.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert "%2F" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/items/1", "/items/a%20b", "/items/%252F", "/items?next=%2F"])
async def test_other_paths_and_an_encoded_slash_in_the_query_reach_the_app(path: str) -> None:
    async with in_process_client(EncodedSlashMiddleware(_ok)) as http:
        response: httpx.Response = await http.get(path)
    assert response.status_code == 200
