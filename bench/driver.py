"""What `make bench`'s runs (bench.run, bench.features) and `make bench-compare` share: the cores,
a migrated and seeded PostgreSQL, the generated service started the bench's way, and one timed wrk
run with the server's CPU per request. Their wrk runs are the bake's own scenario table
(bench/workloads.py)."""

import asyncio
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil

from bench.workloads import Workloads
from tests.baking import tool_env
from tests.serving import wait_until_answering

ROOT = Path(__file__).resolve().parents[1]
SERVER_CORE, LOAD_CORE = 0, 1
POOL_SIZE = 8
# Rows seeded ahead of each delete run, per second of it: more than any app deletes in a second.
DELETABLE_PER_SECOND = 40_000


def migrate(project: Path, database_url: str) -> None:
    """Apply the bake's migrations to `database_url`."""
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "heads"],
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


def service_command(project: Path) -> list[str]:
    """`python -m <package>` of a bake: the one package under its src/ that has a __main__."""
    packages = [main.parent.name for main in (project / "src").glob("*/__main__.py")]
    assert len(packages) == 1, f"{project / 'src'}: expected one runnable package, got {packages}"
    return [sys.executable, "-m", packages[0]]


def server_env(project: Path, database_url: str, port: int, **env: str) -> dict[str, str]:
    """The environment of a server of the bench: a pool of POOL_SIZE, prod, no metrics listener,
    the bake and bench.apps importable, and `env` over them."""
    variables = tool_env(project, DATABASE_URL=database_url, PORT=str(port),
                         POOL_SIZE=str(POOL_SIZE), POOL_MIN_SIZE=str(POOL_SIZE),
                         POOL_MAX_SIZE=str(POOL_SIZE), APP_ENV="prod", METRICS_PORT="0",
                         **env)  # fmt: skip
    variables["PYTHONPATH"] = f"{project / 'src'}{os.pathsep}{ROOT}"  # the bake, and bench.apps
    return variables


def start_pinned(
    command: list[str], project: Path, database_url: str, port: int, log: Path, **env: str
) -> "subprocess.Popen[bytes]":
    """Start a server on the server core with the bench's settings (a pool of POOL_SIZE, prod, no
    metrics listener) and `env` over them; return once GET /items/1 answers."""
    variables = server_env(project, database_url, port, **env)
    pinned = ["taskset", "-c", str(SERVER_CORE), *command]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            pinned, cwd=ROOT, env=variables, stdout=sink, stderr=subprocess.STDOUT
        )
    wait_until_answering(process, f"http://127.0.0.1:{port}/items/1", what=f"{command} ({log})")
    return process


def check_answers(name: str, base: str) -> None:
    """Every app must answer every workload correctly before it is timed."""
    with httpx.Client(base_url=base) as http:
        assert http.get("/items/7").json()["id"] == 7, name
        assert len(http.get("/items", params={"after": 10, "limit": 20}).json()["data"]) == 20, name
        created = http.post("/items", json={"name": "check", "price_cents": 1, "quantity": 2})
        assert created.status_code == 201, name
        assert created.json()["quantity"] == 2, name
        patched = http.patch("/items/9", json={"quantity": 5})
        assert patched.status_code == 200, name
        assert patched.json()["quantity"] == 5, name


async def seed_deletable(url: str, count: int) -> int:
    """Insert `count` rows with consecutive ids for a delete run; return the first id."""
    connection = await asyncpg.connect(url)
    try:
        row = await connection.fetchrow(
            "WITH new AS (INSERT INTO items (name, price_cents) "
            "SELECT 'to delete', 1 FROM generate_series(1, $1) RETURNING id) "
            "SELECT min(id) AS first, max(id) AS last FROM new", count,
        )  # fmt: skip
        assert row is not None
        assert row["last"] - row["first"] + 1 == count, "the delete range must be contiguous"
        return int(row["first"])
    finally:
        await connection.close()


def drive(
    workloads: Workloads,
    server: psutil.Process,
    base: str,
    workload: str,
    *,
    database_url: str,
    seconds: int,
    connections: int,
) -> dict[str, float]:
    """One wrk run of `workload` at the server `server` answering on `base`: wrk's figures and the
    server's CPU per request (`cpu_us`). An operation that uses each id once first gets rows of
    its own, seeded before the CPU is read."""
    start = 1
    if workloads.consumes_ids(workload):
        start = asyncio.run(seed_deletable(database_url, DELETABLE_PER_SECOND * seconds))
    cpu_before = sum(server.cpu_times()[:2])
    figures = workloads.run(base, workload, seconds=seconds, connections=connections, start=start)
    # Server CPU per request (user + system): the code's cost, whatever else the shared machine
    # runs meanwhile (throughput moves with that, this much less).
    cpu = sum(server.cpu_times()[:2]) - cpu_before
    return {**figures, "cpu_us": cpu / max(figures["requests"], 1) * 1e6}


def machine(pg_version: str) -> dict[str, Any]:
    """What the figures were measured on."""
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo
                if line.startswith("model name")), platform.processor())  # fmt: skip
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "postgresql": pg_version,
        "wrk": (wrk_version.stdout + wrk_version.stderr).split("\n")[0].strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
