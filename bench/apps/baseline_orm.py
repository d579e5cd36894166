"""The baseline tier: what a typical tutorial-shaped service does.

SQLAlchemy 2 async ORM sessions via Depends, response_model, one BaseHTTPMiddleware; served with
uvicorn's defaults (asyncio loop, access log on).
"""

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from sqlalchemy import BigInteger, DateTime, Integer, String, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .common import DATABASE_URL, POOL_SIZE
from .models import Item, ItemCreate, ItemPage, ItemUpdate

engine = create_async_engine(
    DATABASE_URL.replace("postgresql://", "postgresql+asyncpg://", 1),
    pool_size=POOL_SIZE,
    max_overflow=0,
)
Session = async_sessionmaker(engine, expire_on_commit=False)


class Base(DeclarativeBase):
    pass


class ItemRow(Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    description: Mapped[str | None] = mapped_column(String)
    price_cents: Mapped[int] = mapped_column(BigInteger)
    quantity: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    version: Mapped[int] = mapped_column(Integer, server_default="1")


async def get_session() -> AsyncIterator[AsyncSession]:
    async with Session() as session:
        yield session


SessionDep = Annotated[AsyncSession, Depends(get_session)]
app = FastAPI()


@app.middleware("http")
async def timing_header(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    start = time.perf_counter()
    response = await call_next(request)
    response.headers["x-process-time"] = f"{time.perf_counter() - start:.6f}"
    return response


@app.get("/items/{item_id}", response_model=Item)
async def get_item(item_id: int, session: SessionDep) -> ItemRow:
    row = await session.get(ItemRow, item_id)
    if row is None:
        raise HTTPException(404)
    return row


@app.get("/items", response_model=ItemPage)
async def list_items(session: SessionDep, after: int = 0, limit: int = 20) -> dict[str, object]:
    rows = await session.scalars(
        select(ItemRow).where(ItemRow.id > after).order_by(ItemRow.id).limit(limit)
    )
    return {"data": list(rows)}


@app.post("/items", response_model=Item, status_code=201)
async def create_item(new: ItemCreate, session: SessionDep) -> ItemRow:
    row = ItemRow(**new.model_dump())
    session.add(row)
    await session.commit()
    await session.refresh(row)
    return row


@app.patch("/items/{item_id}", response_model=Item)
async def update_item(item_id: int, changes: ItemUpdate, session: SessionDep) -> ItemRow:
    row = await session.get(ItemRow, item_id)
    if row is None:
        raise HTTPException(404)
    row.quantity = changes.quantity
    row.version += 1
    row.updated_at = func.now()
    await session.commit()
    await session.refresh(row)
    return row


@app.delete("/items/{item_id}", status_code=204)
async def delete_item(item_id: int, session: SessionDep) -> Response:
    row = await session.get(ItemRow, item_id)
    if row is None:
        raise HTTPException(404)
    await session.delete(row)
    await session.commit()
    return Response(status_code=204)
