"""`python -m {{ cookiecutter.package_name }} migrate`: `alembic upgrade heads` as a deploy runs it.

- A revision that waited longer than its `lock_timeout` (migrations/env.py) was rolled back; it
  is tried again, up to MIGRATION_ATTEMPTS times with a doubling pause, each failure naming the
  session that held the lock (`pg_blocking_pids`, watched while the revision waits). The last one
  fails the command. Revisions applied before it stay applied: each runs in its own transaction.
- A database that a newer release migrated (a revision this image does not know) is left as it
  is, and the command says so and succeeds: a rollback redeploys the previous image, whose
  migration Job then runs this, and the schema only moves forward (docs/deploying.md).

Deploy-time code: the server's process never imports this module (nor alembic, nor SQLAlchemy).
"""

import os
import sys
import threading
import time
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, exc, pool

ATTEMPTS = int(os.environ.get("MIGRATION_ATTEMPTS", "10"))
FIRST_PAUSE_S = float(os.environ.get("MIGRATION_RETRY_PAUSE_S", "1"))
LONGEST_PAUSE_S = 30.0
# How often the watcher looks at what the migration's session waits for: a lock wait lasts
# lock_timeout (50 ms by default), so it is looked at several times within one.
WATCH_EVERY_S = 0.01
LOCK_NOT_AVAILABLE = "55P03"  # SQLSTATE of a lock_timeout
BLOCKERS = """
    SELECT blocker.pid, blocker.application_name, blocker.state,
           extract(epoch FROM now() - blocker.xact_start)::int AS transaction_seconds,
           left(blocker.query, 120) AS query
      FROM pg_stat_activity AS waiting
      JOIN pg_stat_activity AS blocker ON blocker.pid = ANY(pg_blocking_pids(waiting.pid))
     WHERE waiting.pid = %s AND waiting.wait_event_type = 'Lock'
"""


def _dsn() -> str:
    # The variable, else the file of a Secret mounted in SECRETS_DIR (the chart's migration Job
    # with secrets as files), as migrations/env.py reads it.
    secret = Path(os.environ.get("SECRETS_DIR", "/run/secrets")) / "DATABASE_URL"
    url = os.environ.get("DATABASE_URL") or (secret.read_text().strip() if secret.is_file() else "")
    if not url:
        raise SystemExit(f"DATABASE_URL is not set, nor in {secret}: nothing to migrate")
    return url


def _sqlalchemy_url(url: str) -> str:
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


class BlockerWatch:
    """A thread that remembers who last blocked the session `pid` (in words), on a connection
    of its own."""

    def __init__(self, dsn: str, pid: int) -> None:
        self.pid = pid
        self.last: str | None = None
        self._stop = threading.Event()
        self._connection = psycopg.connect(dsn, autocommit=True, application_name="migrate-watch")
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_EVERY_S):
            try:
                rows = self._connection.execute(BLOCKERS, (self.pid,)).fetchall()
            except psycopg.Error:
                return  # the report loses its names, never the migration its run
            if rows:
                self.last = "; ".join(
                    f"pid {pid} ({name or 'no application_name'}, {state}, in a transaction for "
                    f"{seconds} s, last query: {query!r})"
                    for pid, name, state, seconds, query in rows
                )

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._connection.close()


def _is_lock_timeout(error: exc.DBAPIError) -> bool:
    return getattr(error.orig, "sqlstate", None) == LOCK_NOT_AVAILABLE


def unknown_revisions(config: Config, connection: Connection) -> set[str]:
    """The database's revisions that this project's migrations do not have."""
    known = {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}
    current = MigrationContext.configure(connection).get_current_heads()
    return set(current) - known


def _attempt(config: Config, dsn: str) -> str | None:
    """One `upgrade heads`; None when done, else who held the lock it waited for."""
    engine = create_engine(
        _sqlalchemy_url(dsn), poolclass=pool.NullPool, connect_args={"application_name": "migrate"}
    )
    try:
        with engine.connect() as connection:
            ahead = unknown_revisions(config, connection)
            connection.rollback()
            if ahead:
                print(
                    f"The database is at {', '.join(sorted(ahead))}, which this release does not "
                    "know: a newer release migrated it. Nothing to do: the schema only moves "
                    "forward, and this release runs on it (docs/deploying.md, Rolling back).",
                    file=sys.stderr,
                )
                return None
            pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
            connection.rollback()
            watch = BlockerWatch(dsn, pid)
            try:
                config.attributes["connection"] = connection
                command.upgrade(config, "heads")
            except exc.DBAPIError as error:
                if not _is_lock_timeout(error):
                    raise
                return watch.last or "a session gone before it could be named"
            finally:
                watch.close()
    finally:
        engine.dispose()
    return None


def migrate(root: Path) -> int:
    """Apply every revision; 0 when the database is at (or past) this project's heads."""
    config = Config(str(root / "alembic.ini"))
    dsn = _dsn()
    pause = FIRST_PAUSE_S
    for attempt in range(1, ATTEMPTS + 1):
        holder = _attempt(config, dsn)
        if holder is None:
            return 0
        if attempt == ATTEMPTS:
            print(
                f"Gave up after {ATTEMPTS} attempts: a revision could not take its lock within "
                f"lock_timeout; it was held by {holder}. End that session or wait for it, then "
                "migrate again (docs/changing-the-schema.md).",
                file=sys.stderr,
            )
            return 1
        print(
            f"Attempt {attempt} of {ATTEMPTS}: a revision waited past lock_timeout for a lock held "
            f"by {holder}; rolled back, trying again in {pause:g} s.",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(pause)
        pause = min(pause * 2, LONGEST_PAUSE_S)
    return 1
