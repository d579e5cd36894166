"""What `make bench`'s two runs (bench.run, bench.features) share: the cores and a migrated and
seeded PostgreSQL. Their wrk runs are the bake's own scenario table (bench/workloads.py)."""

import subprocess
import sys
from pathlib import Path

import asyncpg

from tests.baking import tool_env

SERVER_CORE, LOAD_CORE = 0, 1
POOL_SIZE = 8


def migrate(project: Path, database_url: str) -> None:
    """Apply the bake's migrations to `database_url`."""
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=project,
        env=tool_env(project, DATABASE_URL=database_url),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


async def prepare(url: str, rows: int) -> str:
    """Seed `rows` items; return PostgreSQL's version."""
    connection = await asyncpg.connect(url)
    try:
        # The same for every app; commits wait for no fsync so the CPU, not the disk, is measured.
        await connection.execute("ALTER SYSTEM SET synchronous_commit = off")
        await connection.execute("SELECT pg_reload_conf()")
        await connection.execute(
            "INSERT INTO items (name, description, price_cents, quantity) "
            "SELECT 'item ' || n, 'seeded row ' || n, n * 10, n % 100"
            " FROM generate_series(1, $1) n",
            rows,
        )
        await connection.execute("VACUUM ANALYZE items")
        version: str = await connection.fetchval("SHOW server_version")
        return version
    finally:
        await connection.close()
