"""The FastAPI floor: FastAPI's route machinery, as this template runs it, and nothing else.

The minimal app's routes declared on a router of the template's route class (FastRoute, from the
baked service, mounted with include_router as the service mounts its resources), with what a route
could drop without leaving FastAPI: no conversion of the answer (the row's JSON bytes, orjson,
go out as a plain Response), no reset query on release, no middleware, FastAPI's telemetry off.
What it costs above the raw ASGI ceiling is FastAPI's per-request machinery (routing, the request
wrapper, parameter and body validation); what the generated service costs above it is everything
the service adds (its middleware, validation of headers, conditional requests, the access log).
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import APIRouter, FastAPI, HTTPException, Response
from inventory_service.kit.routing import resource_router

from .common import DELETE, INSERT, SELECT_BY_ID, SELECT_PAGE, UPDATE_QUANTITY, open_pool
from .models import ItemCreate, ItemUpdate

_pool: Any = None


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    global _pool
    _pool = await open_pool()
    yield
    await _pool.close()


# FastAPI's built-in OpenTelemetry off, as the service runs it: on, it checks the global providers
# on every request.
app = FastAPI(
    lifespan=lifespan,
    openapi_url=None,
    telemetry={"tracing": False, "metrics": False, "logs": False},
)
router: APIRouter = resource_router("/items")


def _json(value: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(value), status_code, media_type="application/json")


@router.get("/{item_id}")
async def get_item(item_id: int) -> Response:
    async with _pool.acquire() as connection:
        row = await connection.fetchrow(SELECT_BY_ID, item_id)
    if row is None:
        raise HTTPException(404)
    return _json(dict(row))


@router.get("")
async def list_items(after: int = 0, limit: int = 20) -> Response:
    async with _pool.acquire() as connection:
        rows = await connection.fetch(SELECT_PAGE, after, limit)
    return _json({"data": [dict(row) for row in rows]})


@router.post("", status_code=201)
async def create_item(new: ItemCreate) -> Response:
    async with _pool.acquire() as connection:
        row = await connection.fetchrow(
            INSERT, new.name, new.description, new.price_cents, new.quantity
        )
    return _json(dict(row), 201)


@router.patch("/{item_id}")
async def update_item(item_id: int, changes: ItemUpdate) -> Response:
    async with _pool.acquire() as connection:
        row = await connection.fetchrow(UPDATE_QUANTITY, item_id, changes.quantity)
    if row is None:
        raise HTTPException(404)
    return _json(dict(row))


@router.delete("/{item_id}", status_code=204)
async def delete_item(item_id: int) -> Response:
    async with _pool.acquire() as connection:
        deleted = await connection.fetchval(DELETE, item_id)
    if deleted is None:
        raise HTTPException(404)
    return Response(status_code=204)


app.include_router(router)
