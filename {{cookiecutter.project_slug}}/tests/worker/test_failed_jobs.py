"""worker/failed_jobs.py: `python -m {{ cookiecutter.package_name }} jobs ...` queues again only
the jobs held as failed, says which ids it left, and refuses what is not a job id (the happy path
is the guide's, test_jobs_guide.py)."""

import os
import subprocess
import sys
import uuid

import asyncpg

from .workers import enqueue_events, jobs_by_status


def _jobs(database_url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "{{ cookiecutter.package_name }}", "jobs", *arguments],
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_requeue_queues_the_failed_job_and_names_the_id_it_left_as_it_is(
    queue: asyncpg.Connection, database_url: str
) -> None:
    await enqueue_events(queue, [str(uuid.uuid4()), str(uuid.uuid4())])
    failed, waiting = [
        row["id"] for row in await queue.fetch("SELECT id FROM pgqueuer ORDER BY id")
    ]
    await queue.execute("UPDATE pgqueuer SET status = 'failed' WHERE id = $1", failed)
    done = _jobs(database_url, "requeue", str(failed), str(waiting))
    assert done.returncode == 1
    assert done.stdout.strip() == f"job {failed} queued again"
    assert done.stderr.strip() == f"job {waiting} is not held as failed: left as it is"
    assert await jobs_by_status(queue) == {"queued": 2}


async def test_nothing_failed_is_said_and_a_bad_id_is_refused(
    queue: asyncpg.Connection, database_url: str
) -> None:
    listed = _jobs(database_url, "failed")
    assert (listed.returncode, listed.stdout.strip()) == (0, "no job is held as failed")
    for arguments in (("requeue",), ("requeue", "12a"), ("requeue", "-1"), ("retry", "1"), ()):
        refused = _jobs(database_url, *arguments)
        assert refused.returncode == 2, arguments
        assert "usage: python -m {{ cookiecutter.package_name }} jobs failed" in refused.stderr
