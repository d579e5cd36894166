"""The first resource's routes.py as a user guards it: `resource_router(PREFIX, ...,
dependencies=[Depends(guard)])`, the way FastAPI's APIRouter takes a guard (tests/kit)."""

import inspect
import re
import sys
import types

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.routing import APIRoute

from {{ cookiecutter.package_name }}.serving.resources import ROUTERS

from ..declared import first_resource

# The line of routes.py that makes the router, as `make resource` writes it.
_ROUTER_LINE = re.compile(r"^router = resource_router\((?P<arguments>[^\n]*)\)$", re.MULTILINE)
# The token the guard lets through; READER may only read.
WRITER, READER = "writer", "reader"
TOKEN_HEADER = "x-test-token"


async def guard(request: Request) -> None:
    """401 without the token, 403 when a reader writes."""
    token = request.headers.get(TOKEN_HEADER)
    if token not in (WRITER, READER):
        raise HTTPException(401, "No token.", headers={"WWW-Authenticate": "Bearer"})
    if token == READER and request.method != "GET":
        raise HTTPException(403, "This token may only read.")


def guarded_router() -> APIRouter:
    """A new router from the first resource's routes.py with its router line given the guard."""
    declared = next(r for r in first_resource().router.routes if isinstance(r, APIRoute))
    original = sys.modules[declared.endpoint.__module__]
    edited, count = _ROUTER_LINE.subn(
        r"router = resource_router(\g<arguments>, dependencies=[Depends(guard)])",
        inspect.getsource(original),
    )
    assert count == 1, "routes.py makes its router on one line"
    module = types.ModuleType(f"{original.__name__}_guarded")
    module.__package__ = original.__package__
    module.__dict__.update(Depends=Depends, guard=guard)
    exec(compile(edited, original.__file__ or "routes.py", "exec"), module.__dict__)
    router: APIRouter = module.router
    return router


def serve_guarded(router: APIRouter) -> list[APIRouter]:
    """The app's routers (serving/resources.py's ROUTERS) with the first resource's replaced."""
    original = first_resource().router
    return [router if served is original else served for served in ROUTERS]
