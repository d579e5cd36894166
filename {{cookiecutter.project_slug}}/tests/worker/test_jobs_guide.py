"""docs/jobs.md, "Failed jobs": its commands typed as written, in its order, on the service's
DATABASE_URL: `make jobs-failed` lists a job held as failed, `make jobs-requeue ID=<id>` queues
it again."""

import os
import re
import subprocess
import sys
import uuid

import asyncpg

from ..conftest import PROJECT_ROOT
from .workers import clear_queue, enqueue_events, jobs_by_status

GUIDE = PROJECT_ROOT / "docs" / "jobs.md"


def _commands(section: str) -> list[str]:
    """The lines of the section's shell blocks, comments dropped, in the guide's order."""
    text = GUIDE.read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    blocks = re.findall(r"```sh\n(.*?)```", text[start : end if end != -1 else None], re.DOTALL)
    lines = [line.partition("#")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line]


def _typed(command: str, database_url: str) -> str:
    # As a user types it in the project; this interpreter's environment is the project's venv.
    env = {**os.environ, "DATABASE_URL": database_url, "VENV": sys.prefix}
    done = subprocess.run(
        command, shell=True, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


async def test_the_guides_commands_list_a_failed_job_and_queue_it_again(
    connection: asyncpg.Connection, database_url: str
) -> None:
    await clear_queue(connection)
    try:
        await enqueue_events(connection, [str(uuid.uuid4())])
        job_id = await connection.fetchval("UPDATE pgqueuer SET status = 'failed' RETURNING id")
        listed, requeued = _commands("Failed jobs")
        assert listed == "make jobs-failed"
        assert re.search(rf"\b{job_id}\b", _typed(listed, database_url))
        assert "<id>" in requeued
        _typed(requeued.replace("<id>", str(job_id)), database_url)
        assert await jobs_by_status(connection) == {"queued": 1}
    finally:
        await clear_queue(connection)
