"""app.py: the lifespan owns the pool (opened and warmed at start-up, closed at shutdown); the docs
and the schema are off in production unless DOCS_IN_PROD."""

import asyncio
import time
from typing import Any

from {{ cookiecutter.package_name }}.serving.app import APPLICATION_NAME, create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import in_process_client, lifespan
from ..declared import run_sql

SETTLE_SECONDS = 5.0


async def _connections_named(url: str, application_name: str) -> int:
    count: int = await run_sql(
        url,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
        application_name,
    )
    return count


async def _settled_count(url: str, expected: int | None = None) -> int:
    """The service's backends once their count holds still (and is `expected`, when given,
    within SETTLE_SECONDS): a backend leaves pg_stat_activity a moment after its client closed,
    and the pools of earlier tests may still be leaving."""
    deadline = time.monotonic() + SETTLE_SECONDS
    count = await _connections_named(url, APPLICATION_NAME)
    while time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        again = await _connections_named(url, APPLICATION_NAME)
        if again == count and expected in (None, count):
            break
        count = again
    return count


async def test_lifespan_opens_warm_pool_and_closes_it(
    database_url: str, auth_settings: dict[str, Any]
) -> None:
    settings = Settings(
        database_url=database_url, app_env="test", pool_min_size=3, pool_max_size=5, **auth_settings
    )
    app = create_app(settings)
    before = await _settled_count(database_url)  # creating the app opened none
    async with lifespan(app) as state:
        pool = state.database.pool
        assert pool.get_size() == 3
        # The lifespan's idempotency sweep takes one for its first DELETE as the pool opens.
        for _ in range(round(SETTLE_SECONDS / 0.02)):
            if pool.get_idle_size() == 3:
                break
            await asyncio.sleep(0.02)
        assert pool.get_idle_size() == 3
        assert pool.get_size() == 3  # warm: every connection was open before the first lease
        assert await _settled_count(database_url, before + 3) == before + 3
    assert pool.is_closing()
    assert await _settled_count(database_url, before) == before


async def _docs_statuses(settings: Settings) -> list[int]:
    async with in_process_client(create_app(settings)) as http:
        return [(await http.get(path)).status_code for path in ("/docs", "/redoc", "/openapi.json")]


async def test_docs_and_schema_are_off_in_prod_by_default(settings: Settings) -> None:
    assert await _docs_statuses(settings.model_copy(update={"app_env": "prod"})) == [404, 404, 404]


async def test_docs_in_prod_setting_turns_docs_and_schema_on(settings: Settings) -> None:
    on = settings.model_copy(update={"app_env": "prod", "docs_in_prod": True})
    assert await _docs_statuses(on) == [200, 200, 200]
    assert await _docs_statuses(settings) == [200, 200, 200]  # dev and test: always on
