"""db.py: the pool skips asyncpg's reset query, yet nothing a request leaves behind reaches the next one.

Without the reset query (a round trip per request), state lives as long as the transaction that
made it: a connection released inside one is rolled back, and the service's statements keep to
transaction-scoped forms (SET LOCAL, transaction advisory locks, ON COMMIT DROP), which the scan
at the end holds every resource's sql.py to.
"""

import importlib
import pkgutil
import re
from typing import Any

import orjson

import {{ cookiecutter.package_name }}
from {{ cookiecutter.package_name }}.db import Database
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from .conftest import lifespan
from .declared import first_resource, new_body


async def test_release_sends_no_reset_query(database: Database) -> None:
    async with database.connection() as connection:
        assert connection.get_reset_query() == ""
        backend = connection.get_server_pid()
    async with database.connection() as connection:
        assert connection.get_server_pid() == backend  # the same connection came back


async def test_a_connection_released_inside_a_transaction_is_rolled_back(
    database: Database,
) -> None:
    resource = first_resource()
    fields = ", ".join(resource.fields.model_fields)
    insert = f"""
        INSERT INTO {resource.table} ({fields})
        SELECT {fields} FROM json_populate_record(NULL::{resource.table}, $1::json)
        RETURNING id
    """
    async with database.connection() as connection:
        await connection.execute("BEGIN")
        row_id = await connection.fetchval(insert, orjson.dumps(new_body()).decode())
        assert connection.is_in_transaction()
    async with database.connection() as connection:
        assert not connection.is_in_transaction()
        query = f"SELECT count(*) FROM {resource.table} WHERE id = $1"
        assert await connection.fetchval(query, row_id) == 0


async def test_state_a_request_leaves_in_its_transaction_is_gone_for_the_next(
    database: Database,
) -> None:
    async with database.connection() as connection:
        default_timeout = await connection.fetchval("SHOW statement_timeout")
        await connection.execute("BEGIN")
        await connection.execute("SET LOCAL statement_timeout = '1234ms'")
        await connection.execute("SELECT pg_advisory_xact_lock(7531)")
        await connection.execute("CREATE TEMP TABLE scratch (n int) ON COMMIT DROP")
        assert await connection.fetchval("SHOW statement_timeout") == "1234ms"
        # Released with the transaction still open, as a request that failed midway would.
    async with database.connection() as connection:
        assert await connection.fetchval("SHOW statement_timeout") == default_timeout
        assert await connection.fetchval("SELECT to_regclass('pg_temp.scratch')") is None
        assert await connection.fetchval("SELECT pg_try_advisory_xact_lock(7531)") is True


# Forms whose effect outlives the transaction: the next request on the connection would see it.
_SESSION_SCOPED = re.compile(
    r"(?:^|;)\s*(?:SET|RESET|LISTEN|PREPARE|DECLARE|LOAD|DISCARD)\b(?!\s+LOCAL)"
    r"|\bset_config\s*\([^)]*,\s*false\s*\)"
    r"|\bpg_(?:try_)?advisory_lock"
    r"|\bCREATE\s+(?:GLOBAL\s+|LOCAL\s+)?TEMP(?:ORARY)?\s+TABLE\b(?![^;]*ON\s+COMMIT\s+DROP)",
    re.IGNORECASE,
)


def _service_statements() -> dict[str, str]:
    statements = {}
    for module in pkgutil.walk_packages({{ cookiecutter.package_name }}.__path__, "{{ cookiecutter.package_name }}."):
        if module.name.endswith(".sql"):
            sql = importlib.import_module(module.name)
            for name, value in vars(sql).items():
                if name.isupper() and isinstance(value, str):
                    statements[f"{module.name}.{name}"] = value
    return statements


def test_no_statement_of_the_service_leaves_session_state() -> None:
    statements = _service_statements()
    assert statements, "no sql.py found: the scan would prove nothing"
    assert [name for name, text in statements.items() if _SESSION_SCOPED.search(text)] == []


def test_the_scan_recognises_session_scoped_forms() -> None:
    leaking = [
        "SET statement_timeout = 0",
        "SELECT 1; SET search_path = x",
        "SELECT set_config('x.y', '1', false)",
        "SELECT pg_advisory_lock(1)",
        "CREATE TEMP TABLE t (n int)",
        "LISTEN channel",
    ]
    contained = [
        "UPDATE t SET n = 1",
        "SET LOCAL statement_timeout = 0",
        "SELECT set_config('x.y', '1', true)",
        "SELECT pg_advisory_xact_lock(1)",
        "CREATE TEMP TABLE t (n int) ON COMMIT DROP",
    ]
    assert [text for text in leaking if not _SESSION_SCOPED.search(text)] == []
    assert [text for text in contained if _SESSION_SCOPED.search(text)] == []


async def test_connections_carry_the_statement_timeout(
    database_url: str, auth_settings: dict[str, Any]
) -> None:
    settings = Settings(
        database_url=database_url, app_env="test", statement_timeout_ms=1234, **auth_settings
    )
    app = create_app(settings)
    async with lifespan(app) as state, state.database.connection() as connection:
        assert await connection.fetchval("SHOW statement_timeout") == "1234ms"
