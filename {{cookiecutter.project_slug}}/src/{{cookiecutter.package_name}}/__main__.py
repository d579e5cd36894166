"""`python -m {{ cookiecutter.package_name }}`: the settings from the environment, then the server.

`python -m {{ cookiecutter.package_name }} rotate-cursor-key`: a new key for the sorted pages'
cursors, the old one still accepted; pods take it at their next start (a rollout).

`python -m {{ cookiecutter.package_name }} migrate`: apply the migrations to DATABASE_URL, trying a revision
again when it waited too long for a lock (migrate.py); what the chart's migration Job runs.
{%- if cookiecutter.jobs == "postgres" %}

`python -m {{ cookiecutter.package_name }} worker`: run the jobs the writes enqueue until SIGTERM
(worker/run.py).

`python -m {{ cookiecutter.package_name }} jobs failed | jobs requeue <id> [<id> ...]`: the jobs
held as failed, and queuing them again (worker/failed_jobs.py).
{%- endif %}
"""

import sys
from pathlib import Path

# Each command imports what it runs and no more (hence the imports below, in `main`): the
# migration Job's `migrate` starts without the service's modules (FastAPI and the routes are
# half a second of CPU a start), and the server without alembic and SQLAlchemy.
COMMANDS = ("migrate", "rotate-cursor-key"{% if cookiecutter.jobs == "postgres" %}, "worker", "jobs"{% endif %})
# The commands that take arguments of their own.
WITH_ARGUMENTS: tuple[str, ...] = ({% if cookiecutter.jobs == "postgres" %}"jobs",{% endif %})


def main(arguments: tuple[str, ...] = ()) -> int:
    if arguments and (
        arguments[0] not in COMMANDS or (len(arguments) > 1 and arguments[0] not in WITH_ARGUMENTS)
    ):
        print(f"usage: python -m {__package__} [{' | '.join(COMMANDS)}]", file=sys.stderr)
        return 2
    if arguments == ("migrate",):
        # Before the settings: the migration Job has DATABASE_URL, not the service's other ones.
        from .migrate import migrate  # deploy-time only: the server never imports alembic

        return migrate(Path.cwd())
    from pydantic import ValidationError

    from .settings import {% if cookiecutter.auth != "none" %}CommandSettings, {% endif %}Settings
    from .settings_sources import describe_error

    try:
{%- if cookiecutter.auth != "none" %}
        # A command answers no request: it needs none of the credentials' settings.
        settings = CommandSettings() if arguments else Settings()
{%- else %}
        settings = Settings()
{%- endif %}
    except ValidationError as error:
        print(describe_error(error), file=sys.stderr)
        return 2
    if arguments == ("rotate-cursor-key",):
        import asyncio

        from .kit.cursor_keys import rotate_cursor_key

        rotated_at = asyncio.run(rotate_cursor_key(settings))
        print(f"cursor key rotated at {rotated_at}; restart the pods (a rollout) to sign with it")
        return 0
{%- if cookiecutter.jobs == "postgres" %}
    if arguments == ("worker",):
        from .worker.run import run as run_worker  # the server's process never imports it

        return run_worker(settings)
    if arguments[:1] == ("jobs",):
        from .worker.failed_jobs import command as jobs_command

        return jobs_command(settings, arguments[1:])
{%- endif %}
    from .serving import server

    problem = server.framework_problem()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    return 0 if server.run(settings) else 3  # 3: uvicorn's start-up failure


if __name__ == "__main__":
    sys.exit(main(tuple(sys.argv[1:])))
