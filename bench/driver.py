"""What `make bench`'s two runs (bench.run, bench.features) share: the cores, a migrated and
seeded PostgreSQL, and one wrk run of a workload from bench/wrk/ with its figures read back."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import asyncpg

from tests.baking import tool_env

WRK = Path(__file__).resolve().parent / "wrk"
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


def wrk(
    base: str, workload: str, *, rows: int, duration: int, connections: int,
    delay_ms: int | None = None, start: int = 0, headers: dict[str, str] | None = None,
) -> dict[str, float]:  # fmt: skip
    """One wrk run of bench/wrk/<workload>.lua (paced by `delay_ms` of think time per request
    when given); its requests, rate, p50, p99 and errors (non-2xx answers and socket errors)."""
    script = f"ROWS = {rows}\nSTART = {start}\n" + (WRK / f"{workload}.lua").read_text()
    if delay_ms is not None:
        script = f"DELAY_MS = {delay_ms}\n" + script + (WRK / "paced.lua").read_text()
    script += (WRK / "report.lua").read_text()
    flags = [item for name, value in (headers or {}).items() for item in ("-H", f"{name}: {value}")]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        result = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", *flags, "-s", handle.name, base],
            capture_output=True, text=True, check=True, timeout=duration + 30,
        )  # fmt: skip
    finally:
        os.unlink(handle.name)
    line = next(line for line in result.stdout.splitlines() if line.startswith("WRK_JSON "))
    raw = json.loads(line.removeprefix("WRK_JSON "))
    return {
        "requests": raw["requests"],
        "rps": raw["requests"] / (raw["duration_us"] / 1e6),
        "p50_ms": raw["p50_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "errors": raw["non_2xx"] + raw["socket_errors"],
    }
