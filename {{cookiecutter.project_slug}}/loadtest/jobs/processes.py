"""The processes and tables both job benches share: the worker started pinned, the queue's count."""

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import asyncpg
import psutil
from devdb import free_port

from .. import project
from ..drive.service import SERVER_CORE, can_pin

# The key of the deliveries' signature: a bench's, checked by no one.
SECRET = "bench-jobs"  # noqa: S105


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


@contextlib.contextmanager
def worker_process(database_url: str, webhook_url: str) -> Iterator[psutil.Process]:
    """`python -m <package> worker` delivering to `webhook_url`, pinned to the server's core when
    the machine can pin; SIGTERM at the end of the block (it finishes its jobs in flight, then exits)."""
    command = [sys.executable, "-m", project.PACKAGE, "worker"]
    if can_pin():
        command = ["taskset", "-c", str(SERVER_CORE), *command]  # taskset execs: same pid
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "WEBHOOK_URL": webhook_url,
        "WEBHOOK_SECRET": SECRET,
        "LOG_LEVEL": "warning",
        "HOST": "127.0.0.1",
        "METRICS_PORT": str(free_port()),
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(project.ROOT / "src"), os.environ.get("PYTHONPATH")])
        ),
    }
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        yield psutil.Process(process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def queued(database_url: str, *, clear: bool = False) -> int:
    """The jobs waiting in the queue (after deleting every job when `clear`)."""
    connection = await asyncpg.connect(database_url)
    try:
        if clear:
            await connection.execute("DELETE FROM pgqueuer")
        count: int = await connection.fetchval(
            "SELECT count(*) FROM pgqueuer WHERE status = 'queued'"
        )
        return count
    finally:
        await connection.close()
