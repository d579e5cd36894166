"""Python CPU per request of each way to turn rows into a JSON body, route by route.

    PYTHONPATH=<baked project>/src DATABASE_URL=<its migrated, seeded database> \
        python -m bench.hotpaths

For by-id, page, create and patch: (a) FastAPI's response_model path (pydantic-core validates the
dict, then dumps JSON bytes), (b) orjson bytes from the record, (c) the service's own statements
(its `sql.py`: JSON built by PostgreSQL, passed through as bytes). (a) and (b) read the same
columns of the same table with plain statements. Measures process CPU time, so PostgreSQL's own
work (on another core) is not counted; the three share everything else.
"""

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson
from inventory_service.items import (
    sql,  # the default bake's statements, as the service runs them
)
from pydantic import TypeAdapter

from bench.apps.common import INSERT, SELECT_BY_ID, SELECT_PAGE, UPDATE_QUANTITY
from bench.apps.models import Item, ItemPage

ITEM, PAGE_OF = TypeAdapter(Item), TypeAdapter(ItemPage)


def _strategies(c: Any) -> dict[str, dict[str, Callable[[int], Awaitable[bytes]]]]:
    async def by_id_model(n: int) -> bytes:
        return ITEM.dump_json(ITEM.validate_python(dict(await c.fetchrow(SELECT_BY_ID, n))))

    async def by_id_orjson(n: int) -> bytes:
        return orjson.dumps(dict(await c.fetchrow(SELECT_BY_ID, n)))

    async def by_id_pg(n: int) -> bytes:
        body: str = (await c.fetchrow(sql.SELECT_BY_ID, n))["body"]
        return body.encode()

    async def page_model(n: int) -> bytes:
        rows = await c.fetch(SELECT_PAGE, n, 21)
        return PAGE_OF.dump_json(
            PAGE_OF.validate_python(
                {"data": [dict(r) for r in rows[:20]], "next_after": rows[19]["id"]}
            )
        )

    async def page_orjson(n: int) -> bytes:
        rows = await c.fetch(SELECT_PAGE, n, 21)
        return orjson.dumps({"data": [dict(r) for r in rows[:20]], "next_after": rows[19]["id"]})

    async def page_pg(n: int) -> bytes:
        body: str = await c.fetchval(sql.SELECT_PAGE, n, 20)
        return body.encode()

    def writes(
        statement: str, args: Callable[[int], tuple[Any, ...]], kind: str
    ) -> Callable[[int], Awaitable[bytes]]:
        async def run(n: int) -> bytes:
            row = await c.fetchrow(statement, *args(n))
            if kind == "model":
                return ITEM.dump_json(ITEM.validate_python(dict(row)))
            if kind == "orjson":
                return orjson.dumps(dict(row))
            body: str = row["body"]
            return body.encode()

        return run

    new = lambda n: ("bench", "made here", 100, n % 7)  # noqa: E731
    patch = lambda n: (n, n % 9)  # noqa: E731
    # sql.UPDATE: id, name, description sent?, description, price, quantity, If-Match version.
    service_patch = lambda n: (n, None, False, None, None, n % 9, None)  # noqa: E731
    return {
        "by_id": {"response_model": by_id_model, "orjson": by_id_orjson, "postgres_json": by_id_pg},
        "page": {"response_model": page_model, "orjson": page_orjson, "postgres_json": page_pg},
        "create": {"response_model": writes(INSERT, new, "model"),
                   "orjson": writes(INSERT, new, "orjson"),
                   "postgres_json": writes(sql.INSERT, new, "pg")},
        "patch": {"response_model": writes(UPDATE_QUANTITY, patch, "model"),
                  "orjson": writes(UPDATE_QUANTITY, patch, "orjson"),
                  "postgres_json": writes(sql.UPDATE, service_patch, "pg")},
    }  # fmt: skip


async def main(loops: int = 2000, repeats: int = 5) -> None:
    c = await asyncpg.connect(os.environ["DATABASE_URL"], server_settings={"timezone": "UTC"})
    await c.execute("SET synchronous_commit = off")
    results: dict[str, dict[str, list[float]]] = {}
    for route, strategies in _strategies(c).items():
        results[route] = {name: [] for name in strategies}
        for _ in range(repeats):  # interleaved, so drift hits every strategy alike
            for name, strategy in strategies.items():
                start = time.process_time()
                for n in range(1, loops + 1):
                    await strategy(n * 37 % 90_000 + 1)
                results[route][name].append((time.process_time() - start) / loops * 1e6)
    await c.close()
    print(
        f"{'route':8} "
        + " ".join(f"{n:>16}" for n in ("response_model", "orjson", "postgres_json"))
        + "  (us CPU/request, median)"
    )
    for route, per in results.items():
        print(f"{route:8} " + " ".join(f"{statistics.median(v):16.1f}" for v in per.values()))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
