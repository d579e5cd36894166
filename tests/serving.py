"""Start the real server process (`python -m <package>`) of a baked project on a free port."""

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from .baking import load_dev_module, run, tool_env

PACKAGE = "inventory_service"  # the default bake's package
PINNED = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2


@dataclass
class Served:
    process: "subprocess.Popen[bytes]"
    url: str
    port: int
    log: Path
    metrics_port: int

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_service(project: Path, database_url: str, log: Path, **env: str) -> Served:
    free_port = load_dev_module(project, "devdb").free_port
    port, metrics_port = free_port(), free_port()
    command = [sys.executable, "-m", PACKAGE]
    if PINNED:  # the server on core 0, PostgreSQL and the load generator share the other one
        command = ["taskset", "-c", "0", *command]
    settings = {
        "DATABASE_URL": database_url, "HOST": "127.0.0.1", "PORT": str(port), "APP_ENV": "prod",
        "ACCESS_LOG": "off", "METRICS_PORT": str(metrics_port), **env,
    }  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=project,
            env=tool_env(project, **settings),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    served = Served(process, f"http://127.0.0.1:{port}", port, log, metrics_port)
    wait_until_answering(process, f"{served.url}/readyz", what=f"service (log: {log})")
    return served


def wait_until_answering(
    process: "subprocess.Popen[Any]", url: str, *, what: str, seconds: float = 60
) -> None:
    """Return once `url` answers 200; kill the process and raise if it exits or time runs out."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.05)  # polling a process that is starting: there is no event to wait on


def serve_process(
    command: list[str], cwd: Path, env: dict[str, str], port: int
) -> "subprocess.Popen[bytes]":
    """Any server command, pinned to core 0 when the machine has two cores; returns once its
    /healthz answers."""
    pinned = ["taskset", "-c", "0", *command] if PINNED else command
    process = subprocess.Popen(
        pinned, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_until_answering(process, f"http://127.0.0.1:{port}/healthz", what=str(command))
    return process


@contextlib.contextmanager
def scratch_database(postgres_url: str, name: str) -> Iterator[str]:
    """A database of its own on the shared PostgreSQL server, empty, dropped afterwards."""
    asyncio.run(fetch(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    asyncio.run(fetch(postgres_url, f'CREATE DATABASE "{name}"'))
    try:
        yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        asyncio.run(fetch(postgres_url, f'DROP DATABASE "{name}" WITH (FORCE)'))


@contextlib.contextmanager
def migrated_database(project: Path, postgres_url: str, name: str) -> Iterator[str]:
    """A scratch database with the project's migrations applied."""
    with scratch_database(postgres_url, name) as url:
        migrated = run(
            project, sys.executable, "-m", "alembic", "upgrade", "heads", DATABASE_URL=url
        )
        assert migrated.returncode == 0, migrated.stderr
        yield url


async def fetch(url: str, statement: str, *args: Any) -> list[Any]:
    """Run one statement on a connection of its own; its rows (none for a command)."""
    connection = await asyncpg.connect(url)
    try:
        return await connection.fetch(statement, *args)
    finally:
        await connection.close()
