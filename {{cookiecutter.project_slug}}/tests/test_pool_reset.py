"""The pool skips asyncpg's reset query, yet nothing a request leaves behind reaches the next one."""

from {{ cookiecutter.package_name }}.db import Database
from {{ cookiecutter.package_name }}.settings import Settings


async def _single_connection_database(settings: Settings) -> Database:
    single = settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1})
    return await Database.connect(single, "pool-reset-test")


async def test_release_sends_no_reset_query(settings: Settings) -> None:
    database = await _single_connection_database(settings)
    try:
        async with database.connection() as connection:
            assert connection.get_reset_query() == ""
            backend = connection.get_server_pid()
        async with database.connection() as connection:
            assert connection.get_server_pid() == backend  # the same connection came back
    finally:
        await database.close()


async def test_a_connection_released_inside_a_transaction_is_rolled_back(settings: Settings) -> None:
    database = await _single_connection_database(settings)
    name = "left in an open transaction"
    try:
        async with database.connection() as connection:
            await connection.execute("BEGIN")
            await connection.execute(
                "INSERT INTO {{ cookiecutter.resource_plural }} (name, price_cents) VALUES ($1, 1)", name
            )
            assert connection.is_in_transaction()
        async with database.connection() as connection:
            assert not connection.is_in_transaction()
            count = await connection.fetchval(
                "SELECT count(*) FROM {{ cookiecutter.resource_plural }} WHERE name = $1", name
            )
            assert count == 0
    finally:
        await database.close()
