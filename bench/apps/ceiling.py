"""The ceiling: a raw ASGI app, no framework, asyncpg at its best settings, orjson bytes.

What a request costs when nothing but the server, the driver and the encoder runs.
"""

from typing import Any
from urllib.parse import parse_qs

import orjson

from .common import DELETE, INSERT, SELECT_BY_ID, SELECT_PAGE, UPDATE_QUANTITY, open_pool

_pool: Any = None
_JSON = [(b"content-type", b"application/json")]


async def _reply(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": _JSON})
    await send({"type": "http.response.body", "body": body})


async def _body(receive: Any) -> Any:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return orjson.loads(b"".join(chunks))


async def app(scope: Any, receive: Any, send: Any) -> None:
    global _pool
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _pool = await open_pool()
                await send({"type": "lifespan.startup.complete"})
            else:
                await _pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return
    path, method = scope["path"], scope["method"]
    if path.startswith("/items/"):
        item_id = int(path[7:])
        if method == "DELETE":
            async with _pool.acquire() as connection:
                deleted = await connection.fetchval(DELETE, item_id)
            if deleted is None:
                await _reply(send, 404, b'{"detail":"not found"}')
            else:
                await send({"type": "http.response.start", "status": 204, "headers": []})
                await send({"type": "http.response.body", "body": b""})
            return
        if method == "GET":
            async with _pool.acquire() as connection:
                row = await connection.fetchrow(SELECT_BY_ID, item_id)
        else:
            changes = await _body(receive)
            async with _pool.acquire() as connection:
                row = await connection.fetchrow(UPDATE_QUANTITY, item_id, changes["quantity"])
        if row is None:
            await _reply(send, 404, b'{"detail":"not found"}')
        else:
            await _reply(send, 200, orjson.dumps(dict(row)))
    elif method == "GET":
        after = int(parse_qs(scope["query_string"].decode()).get("after", ["0"])[0])
        async with _pool.acquire() as connection:
            rows = await connection.fetch(SELECT_PAGE, after, 20)
        await _reply(send, 200, orjson.dumps({"data": [dict(row) for row in rows]}))
    else:
        new = await _body(receive)
        async with _pool.acquire() as connection:
            row = await connection.fetchrow(
                INSERT,
                new["name"],
                new.get("description"),
                new["price_cents"],
                new.get("quantity", 0),
            )
        await _reply(send, 201, orjson.dumps(dict(row)))
