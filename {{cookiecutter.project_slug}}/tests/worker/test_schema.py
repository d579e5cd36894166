"""The queue's migration (migrations/machinery/0002_job_queue.py) upgrades and downgrades."""

import os
import secrets
import subprocess
import sys

import asyncpg

from ..conftest import PROJECT_ROOT, with_database
from ..declared import run_sql

QUEUE_TABLES = ["pgqueuer", "pgqueuer_log", "pgqueuer_schedules", "pgqueuer_statistics"]
TABLES = "SELECT tablename FROM pg_tables WHERE tablename LIKE 'pgqueuer%' ORDER BY 1"


def _alembic(url: str, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "alembic", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": url},
        check=True,
        capture_output=True,
    )


async def _queue_tables(url: str) -> list[str]:
    connection = await asyncpg.connect(url)
    try:
        return [row[0] for row in await connection.fetch(TABLES)]
    finally:
        await connection.close()


async def test_the_queue_migration_creates_its_tables_and_its_downgrade_removes_them(
    server_url: str,
) -> None:
    name = f"test_queue_{secrets.token_hex(4)}"
    await run_sql(server_url, f'CREATE DATABASE "{name}"')
    url = with_database(server_url, name)
    try:
        _alembic(url, "upgrade", "heads")
        assert await _queue_tables(url) == QUEUE_TABLES
        _alembic(url, "downgrade", "machinery_0001")
        assert await _queue_tables(url) == []
        _alembic(url, "upgrade", "heads")
        assert await _queue_tables(url) == QUEUE_TABLES
    finally:
        await run_sql(server_url, f'DROP DATABASE "{name}" WITH (FORCE)')
