"""The pool belongs to the lifespan: opened and warmed at start-up, closed at shutdown."""

from typing import Any

import asyncpg

from {{ cookiecutter.package_name }}.app import APPLICATION_NAME, create_app
from {{ cookiecutter.package_name }}.settings import Settings


async def _connections_named(url: str, application_name: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        count: int = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
            application_name,
        )
        return count
    finally:
        await connection.close()


async def test_lifespan_opens_warm_pool_and_closes_it(
    database_url: str, auth_settings: dict[str, Any]
) -> None:
    settings = Settings(
        database_url=database_url, app_env="test", pool_min_size=3, pool_max_size=5, **auth_settings
    )
    app = create_app(settings)
    assert not hasattr(app.state, "db")
    before = await _connections_named(database_url, APPLICATION_NAME)
    async with app.router.lifespan_context(app):
        pool = app.state.db.pool
        assert pool.get_size() == 3
        assert pool.get_idle_size() == 3
        assert await _connections_named(database_url, APPLICATION_NAME) == before + 3
    assert pool.is_closing()
    assert await _connections_named(database_url, APPLICATION_NAME) == before


async def test_connections_carry_the_statement_timeout(
    database_url: str, auth_settings: dict[str, Any]
) -> None:
    settings = Settings(
        database_url=database_url, app_env="test", statement_timeout_ms=1234, **auth_settings
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app), app.state.db.connection() as connection:
        assert await connection.fetchval("SHOW statement_timeout") == "1234ms"
