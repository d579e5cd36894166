"""A guard added the ordinary FastAPI way, `resource_router(PREFIX, ..., dependencies=[...])`,
refuses every route of the resource, on the fast handler (issue #33)."""

import inspect
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import APIRouter, HTTPException

from {{ cookiecutter.package_name }}.kit.routing import FastRoute, build_route_handlers
from {{ cookiecutter.package_name }}.serving import app as serving_app
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, count_rows, started
from ..declared import change, first_resource, new_body

# The line of routes.py that makes the router, as `make resource` writes it.
_ROUTER_LINE = re.compile(r"^router = resource_router\((?P<arguments>[^\n]*)\)$", re.MULTILINE)


async def refuse_everyone() -> None:
    raise HTTPException(401, "No token.", headers={"WWW-Authenticate": "Bearer"})


def _guarded_routes_module() -> types.ModuleType:
    """The first resource's routes.py as its user would edit it: the router line given
    `dependencies=[Depends(refuse_everyone)]`, executed as a module of the resource's package."""
    declared = next(iter(first_resource().router.routes))
    original = sys.modules[getattr(declared, "endpoint").__module__]
    source = inspect.getsource(original)
    edited, count = _ROUTER_LINE.subn(
        r"router = resource_router(\g<arguments>, dependencies=[Depends(refuse_everyone)])",
        source,
    )
    assert count == 1, "routes.py makes its router on one line"
    module = types.ModuleType(f"{original.__name__}_guarded")
    module.__package__ = original.__package__
    module.__dict__["Depends"] = __import__("fastapi").Depends
    module.__dict__["refuse_everyone"] = refuse_everyone
    exec(compile(edited, original.__file__ or "routes.py", "exec"), module.__dict__)  # noqa: S102
    return module


@pytest.fixture
def guarded_router(monkeypatch: pytest.MonkeyPatch) -> Iterator[APIRouter]:
    """The app's routers with the first resource's replaced by its guarded edit."""
    router: APIRouter = _guarded_routes_module().router
    routers = [router if r is first_resource().router else r for r in serving_app.ROUTERS]
    monkeypatch.setattr(serving_app, "ROUTERS", routers)
    yield router


def _requests(item_id: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("GET", f"{BASE}/{item_id}", {}),
        ("GET", BASE, {}),
        ("POST", BASE, {"json": new_body()}),
        ("PATCH", f"{BASE}/{item_id}", {"json": change()}),
        ("DELETE", f"{BASE}/{item_id}", {}),
    ]


async def test_a_guard_given_to_resource_router_refuses_every_route_on_the_fast_handler(
    guarded_router: APIRouter,
    settings: Settings,
    auth_headers: dict[str, str],
    database_url: str,
) -> None:
    app = create_app(settings)
    rows = await count_rows(database_url)
    async with started(app, auth_headers) as http:
        for method, url, extra in _requests(1):
            response = await http.request(method, url, **extra)
            assert response.status_code == 401, (method, url, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
        # The probes are another router: the guard does not reach them.
        assert (await http.get("/healthz")).status_code == 200
    assert await count_rows(database_url) == rows
    guarded = [
        choice
        for choice in build_route_handlers(app)
        if choice.path.startswith(BASE) and choice.path.split("/")[1] == BASE.strip("/")
    ]
    assert len(guarded) == 5
    assert all(choice.fast for choice in guarded), guarded
    assert all(isinstance(route, FastRoute) for route in guarded_router.routes)
