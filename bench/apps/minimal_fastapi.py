"""Minimal FastAPI: plain routes returning dicts, an asyncpg pool, no middleware, no tuning."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from fastapi import FastAPI, HTTPException, Request, Response

from .common import (
    DATABASE_URL,
    DELETE,
    INSERT,
    POOL_SIZE,
    SELECT_BY_ID,
    SELECT_PAGE,
    UPDATE_QUANTITY,
)
from .models import ItemCreate, ItemUpdate


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    app.state.pool = await asyncpg.create_pool(DATABASE_URL, min_size=POOL_SIZE, max_size=POOL_SIZE)
    yield
    await app.state.pool.close()


app = FastAPI(lifespan=lifespan)


@app.get("/items/{item_id}")
async def get_item(item_id: int, request: Request) -> Any:
    async with request.app.state.pool.acquire() as connection:
        row = await connection.fetchrow(SELECT_BY_ID, item_id)
    if row is None:
        raise HTTPException(404)
    return dict(row)


@app.get("/items")
async def list_items(request: Request, after: int = 0, limit: int = 20) -> Any:
    async with request.app.state.pool.acquire() as connection:
        rows = await connection.fetch(SELECT_PAGE, after, limit)
    return {"data": [dict(row) for row in rows]}


@app.post("/items", status_code=201)
async def create_item(new: ItemCreate, request: Request) -> Any:
    async with request.app.state.pool.acquire() as connection:
        row = await connection.fetchrow(
            INSERT, new.name, new.description, new.price_cents, new.quantity
        )
    return dict(row)


@app.patch("/items/{item_id}")
async def update_item(item_id: int, changes: ItemUpdate, request: Request) -> Any:
    async with request.app.state.pool.acquire() as connection:
        row = await connection.fetchrow(UPDATE_QUANTITY, item_id, changes.quantity)
    if row is None:
        raise HTTPException(404)
    return dict(row)


@app.delete("/items/{item_id}", status_code=204)
async def delete_item(item_id: int, request: Request) -> Response:
    async with request.app.state.pool.acquire() as connection:
        deleted = await connection.fetchval(DELETE, item_id)
    if deleted is None:
        raise HTTPException(404)
    return Response(status_code=204)
