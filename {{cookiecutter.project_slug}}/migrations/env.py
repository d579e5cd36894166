"""Alembic runs the SQL migrations against DATABASE_URL through psycopg (deploy time only).

Every run sets two timeouts on its session before the first revision, and again after each
revision (one that lifted them for itself gets them back):

- `lock_timeout` (MIGRATION_LOCK_TIMEOUT_MS): while an `ALTER TABLE` waits for its lock, every
  query of the service on that table waits behind it. The wait is cut short and the revision
  rolled back; `python -m <package> migrate` tries it again later (docs/changing-the-schema.md).
- `statement_timeout` (MIGRATION_STATEMENT_TIMEOUT_MS): a statement that holds a lock the service
  needs (a table rewrite, a validation scan) cannot hold it for longer. A revision that needs
  longer (a backfill) says so itself: `SET LOCAL statement_timeout = '10min'` in its transaction.

Each revision runs in a transaction of its own, so a retry starts at the revision that failed. In
offline mode (`--sql`, what `make lint` hands squawk) the same statements are written out, so the
linter sees exactly what runs.
"""

import os
from pathlib import Path
from typing import Any

from alembic import context
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, create_engine, pool

# Short enough that the service's queries queued behind a waiting ALTER do not overflow the pod's
# MAX_IN_FLIGHT at its serving rate (the figures of `make migrate-under-load`).
LOCK_TIMEOUT_MS = int(os.environ.get("MIGRATION_LOCK_TIMEOUT_MS", "50"))
# A metadata change takes milliseconds; a minute under a lock the service needs is an outage.
STATEMENT_TIMEOUT_MS = int(os.environ.get("MIGRATION_STATEMENT_TIMEOUT_MS", "60000"))
# How the migration's session shows in pg_stat_activity (and in the blocked revision's report).
APPLICATION_NAME = "migrate"
# Offline mode writes SQL and connects to nothing: a URL is needed only for its dialect.
OFFLINE_URL = "postgresql+psycopg://"


def _url() -> str:
    # The variable, else the file of a Secret mounted in SECRETS_DIR (the chart's migration Job).
    secret = Path(os.environ.get("SECRETS_DIR", "/run/secrets")) / "DATABASE_URL"
    url = os.environ.get("DATABASE_URL") or (secret.read_text().strip() if secret.is_file() else "")
    if not url:
        if context.is_offline_mode():
            return OFFLINE_URL
        raise SystemExit(f"DATABASE_URL is not set, nor in {secret}: nothing to migrate")
    # The same URL the service uses, pointed at SQLAlchemy's psycopg 3 dialect.
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def timeouts() -> list[str]:
    """The session's timeouts, as the statements that set them."""
    return [
        f"SET lock_timeout = {LOCK_TIMEOUT_MS}",
        f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}",
    ]


def _restore_timeouts(ctx: MigrationContext, **_: object) -> None:
    # Called in the revision's transaction, after it ran: a `SET` the revision made for its own
    # statements (in an autocommit block, where `SET LOCAL` cannot hold) ends with it.
    for statement in timeouts():
        ctx.execute(statement)


def run_migrations() -> None:
    options: dict[str, Any] = {
        "transaction_per_migration": True,
        "on_version_apply": [_restore_timeouts],
    }
    if context.is_offline_mode():
        context.configure(url=_url(), literal_binds=True, **options)
        for statement in timeouts():
            context.execute(statement)
        context.run_migrations()
        return
    connection = context.config.attributes.get("connection")
    if connection is not None:  # handed over by `python -m <package> migrate`
        _run_on(connection, options)
        return
    engine = create_engine(
        _url(), poolclass=pool.NullPool, connect_args={"application_name": APPLICATION_NAME}
    )
    with engine.connect() as connection:
        _run_on(connection, options)


def _run_on(connection: Connection, options: dict[str, Any]) -> None:
    for statement in timeouts():
        connection.exec_driver_sql(statement)
    connection.commit()  # session settings: they outlive this transaction, for every revision
    context.configure(connection=connection, transactional_ddl=True, **options)
    context.run_migrations()
    connection.commit()


run_migrations()
