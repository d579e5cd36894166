"""`python -m {{ cookiecutter.package_name }} jobs failed` and `... jobs requeue <id> [<id> ...]`:
the jobs held as failed, and queuing them again, on the service's own settings.

What a person runs in a worker's pod (`kubectl exec deploy/<release>-worker -- python -m
{{ cookiecutter.package_name }} jobs failed`), where the database is the service's DATABASE_URL,
from its variable or from its Secret's file (secrets.asFiles): pgqueuer's own `pgq` reads PGDSN
and knows neither. The queries are pgqueuer's (its list of failed jobs, its requeue).
"""

import asyncio
import sys

import asyncpg
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.queries import Queries
from pgqueuer.types import JobId

from ..settings import Settings

USAGE = "jobs failed | jobs requeue <id> [<id> ...]"
# Which of the ids asked for are held as failed: pgqueuer's requeue changes those only, silently.
_HELD = "SELECT id FROM pgqueuer WHERE id = ANY($1::bigint[]) AND status = 'failed' FOR UPDATE"
_SHOWN = 100


async def _failed(settings: Settings) -> list[Job]:
    connection = await asyncpg.connect(settings.dsn)
    try:
        return await Queries(AsyncpgDriver(connection)).list_failed_jobs(limit=_SHOWN)
    finally:
        await connection.close()


async def _requeue(settings: Settings, ids: list[int]) -> set[int]:
    """Queue again those of `ids` held as failed; the ones it did."""
    connection = await asyncpg.connect(settings.dsn)
    try:
        async with connection.transaction():
            held = {row["id"] for row in await connection.fetch(_HELD, ids)}
            await Queries(AsyncpgDriver(connection)).requeue_jobs([JobId(id_) for id_ in held])
        return held
    finally:
        await connection.close()


def _print_failed(jobs: list[Job]) -> None:
    if not jobs:
        print("no job is held as failed")
        return
    print(
        f"{'id':>10}  {'entrypoint':<20}  {'attempts':>8}  {'failed at (UTC)':<19}  created (UTC)"
    )
    for job in jobs:
        print(
            f"{job.id:>10}  {job.entrypoint:<20}  {job.attempts:>8}"
            f"  {job.updated:%Y-%m-%d %H:%M:%S}  {job.created:%Y-%m-%d %H:%M:%S}"
        )
    if len(jobs) == _SHOWN:
        print(f"(the {_SHOWN} most recent)")


def command(settings: Settings, arguments: tuple[str, ...]) -> int:
    """Run `jobs <arguments>`; 0 when done, 1 when an id was not held as failed, 2 on a usage
    error."""
    match arguments:
        case ("failed",):
            _print_failed(asyncio.run(_failed(settings)))
            return 0
        case ("requeue", *given) if given and all(value.isdigit() for value in given):
            ids = [int(value) for value in given]
            done = asyncio.run(_requeue(settings, ids))
            for job_id in ids:
                if job_id in done:
                    print(f"job {job_id} queued again")
                else:
                    print(f"job {job_id} is not held as failed: left as it is", file=sys.stderr)
            return 0 if done == set(ids) else 1
    print(f"usage: python -m {{ cookiecutter.package_name }} {USAGE}", file=sys.stderr)
    return 2
