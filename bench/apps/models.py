"""The pydantic models of the reference apps and of bench.hotpaths' response_model path: the
item as a typical FastAPI service declares it."""

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class Item(BaseModel):
    model_config = ConfigDict(from_attributes=True)  # the ORM baseline validates its rows
    id: int
    name: str
    description: str | None
    price_cents: int
    quantity: int
    created_at: datetime
    updated_at: datetime
    version: int


class ItemPage(BaseModel):
    data: list[Item]
    next_after: int | None = None


class ItemCreate(BaseModel):
    name: str
    description: str | None = None
    price_cents: int
    quantity: int = 0


class ItemUpdate(BaseModel):
    quantity: int
