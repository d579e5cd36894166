"""What the reference apps share: the table of the default bake, its SQL, and the pool of the apps
tuned the way the service is (no reset query on release)."""

import os
from typing import Any

import asyncpg

DATABASE_URL = os.environ["DATABASE_URL"]
POOL_SIZE = int(os.environ.get("POOL_SIZE", "8"))

COLUMNS = "id, name, description, price_cents, quantity, created_at, updated_at, version"
SELECT_BY_ID = f"SELECT {COLUMNS} FROM items WHERE id = $1"
SELECT_PAGE = f"SELECT {COLUMNS} FROM items WHERE id > $1 ORDER BY id LIMIT $2"
INSERT = (
    "INSERT INTO items (name, description, price_cents, quantity) VALUES ($1, $2, $3, $4) "
    f"RETURNING {COLUMNS}"
)
UPDATE_QUANTITY = (
    "UPDATE items SET quantity = $2, version = version + 1, updated_at = now() "
    f"WHERE id = $1 RETURNING {COLUMNS}"
)
DELETE = "DELETE FROM items WHERE id = $1 RETURNING id"


class NoResetConnection(asyncpg.Connection):
    def get_reset_query(self) -> str:
        return ""


async def open_pool() -> Any:
    """POOL_SIZE connections to DATABASE_URL, released without the reset query."""
    return await asyncpg.create_pool(
        DATABASE_URL, min_size=POOL_SIZE, max_size=POOL_SIZE, connection_class=NoResetConnection
    )
