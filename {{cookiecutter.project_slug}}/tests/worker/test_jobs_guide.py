"""docs/jobs.md, "Failed jobs": its commands typed as written, in its order, on the service's
DATABASE_URL: `make jobs-failed` lists a job held as failed, `make jobs-requeue ID=<id>` queues
it again. "In the cluster": what its `kubectl exec` commands run in a worker's pod, run here as the
container would (DATABASE_URL in a file of SECRETS_DIR, no variable), in the guide's order; KEDA's
query counts the jobs due now, as the worker's jobs_in_queue{status="queued"} does."""

import os
import re
import shlex
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import asyncpg

from ..conftest import PROJECT_ROOT
from .workers import clear_queue, enqueue_due_in, enqueue_events, jobs_by_status

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


def _in_pod(command: str, secrets: Path, folder: Path) -> str:
    """What follows `--` in a `kubectl exec` line, run as the worker's container runs it."""
    kubectl, _, in_pod = command.partition(" -- ")
    assert kubectl == "kubectl exec deploy/<release>-worker", command
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "PGDSN"}}
    env |= {"SECRETS_DIR": str(secrets), "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"}
    done = subprocess.run(
        shlex.split(in_pod), cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{in_pod}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


async def test_the_guides_pod_commands_list_a_failed_job_and_queue_it_again(
    queue: asyncpg.Connection, database_url: str, tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "DATABASE_URL").write_text(database_url)
    await enqueue_events(queue, [str(uuid.uuid4())])
    job_id = await queue.fetchval("UPDATE pgqueuer SET status = 'failed' RETURNING id")
    listed, requeued = [line for line in _commands("In the cluster") if line.startswith("kubectl")]
    assert re.search(rf"^\s*{job_id}\s+webhook\b", _in_pod(listed, secrets, tmp_path), re.M)
    assert "<id>" in requeued
    said = _in_pod(requeued.replace("<id>", str(job_id)), secrets, tmp_path)
    assert said.strip() == f"job {job_id} queued again"
    assert await jobs_by_status(queue) == {"queued": 1}


async def test_the_guides_keda_query_counts_the_jobs_due_now_not_those_waiting_out_a_backoff(
    queue: asyncpg.Connection,
) -> None:
    (query,) = re.findall(r'^\s*query: "(.+)"$', GUIDE.read_text(), re.M)
    await enqueue_due_in(queue, 2, timedelta(0), entrypoint="run_elsewhere")
    await enqueue_due_in(queue, 3, timedelta(hours=1))
    assert await queue.fetchval(query) == 2
