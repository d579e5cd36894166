"""The migrations applied under load, one a phase, and the session that blocks the last one.

Each phase adds one revision to a copy of the project's migrations (never to the project's own)
and runs the project's migrate command on it, as a deploy's migration Job would.
"""

import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import psycopg
from scaffold.generate import next_revision

from .. import project

REVISION = '''"""{title} (make migrate-under-load)."""

from alembic import op

revision = "{revision}"
down_revision = {down!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
{body}
'''


@dataclass(frozen=True)
class Phase:
    name: str  # as --phases names it
    title: str
    statements: tuple[str, ...] = ()  # the revision's, in its transaction
    concurrently: tuple[str, ...] = ()  # in an autocommit block, after them
    blocked: bool = False  # another session holds a conflicting lock while it runs


def phases(table: str) -> list[Phase]:
    return [
        Phase("baseline", "no migration (the baseline)"),
        Phase(
            "nullable",
            "a nullable column",
            (f"ALTER TABLE {table} ADD COLUMN under_load_note text",),
        ),
        Phase(
            "default",
            "a column with a default",
            (f"ALTER TABLE {table} ADD COLUMN under_load_flag boolean NOT NULL DEFAULT false",),
        ),
        Phase(
            "index",
            "an index built concurrently",
            concurrently=(
                "DROP INDEX CONCURRENTLY IF EXISTS under_load_flag_idx",
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS under_load_flag_idx"
                f" ON {table} (under_load_flag, id)",
            ),
        ),
        Phase(
            "blocked",
            "ACCESS EXCLUSIVE behind a long transaction",
            (f"ALTER TABLE {table} ADD COLUMN under_load_blocked text",),
            blocked=True,
        ),
    ]


# `python -m <package> migrate`, once its imports are done and the word is given.
_STARTED = """
import sys
from pathlib import Path

import alembic.command, alembic.script, psycopg, sqlalchemy
from {package}.migrate import migrate

print("ready", flush=True)
sys.stdin.readline()
sys.exit(migrate(Path.cwd()))
"""


class Migrations:
    """A copy of the project's alembic.ini and migrations/ in `folder`, revisions added to it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        shutil.copytree(project.ROOT / "migrations", folder / "migrations")
        shutil.copy(project.ROOT / "alembic.ini", folder)

    def _alembic(self, *arguments: str, env: dict[str, str]) -> str:
        command = [sys.executable, "-m", "alembic", *arguments]
        done = subprocess.run(
            command, cwd=self.folder, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout

    def add(self, phase: Phase, env: dict[str, str]) -> str:
        """Write `phase`'s revision after the resources' head; returns its SQL (offline)."""
        number, down = next_revision(self.folder)
        revision = number
        lines = [f'    op.execute("{statement}")' for statement in phase.statements]
        if phase.concurrently:
            lines.append("    with op.get_context().autocommit_block():")
            lines += [f'        op.execute("{statement}")' for statement in phase.concurrently]
        text = REVISION.format(
            title=phase.title, revision=revision, down=down, body="\n".join(lines)
        )
        (self.folder / "migrations" / "versions" / f"{number}_under_load.py").write_text(text)
        return self._alembic("upgrade", f"{down}:{revision}", "--sql", env=env)

    def migrate(self, env: dict[str, str]) -> "subprocess.Popen[str]":
        """The project's migrate command on this copy (what `make migrate` runs), its interpreter
        started and its modules imported first: it says `ready` and waits for a line on its
        stdin. The migration Job starts in a pod of its own; here its start would take the core
        PostgreSQL and the clients share (a revision doing nothing cost p99 170-370 ms so)."""
        source = os.pathsep.join(filter(None, [str(project.ROOT / "src"), env.get("PYTHONPATH")]))
        process = subprocess.Popen(
            [sys.executable, "-c", _STARTED.format(package=project.PACKAGE)],
            cwd=self.folder,
            env={**env, "PYTHONPATH": source},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the migrate command did not start: {process.communicate()[1]}")
        return process


def go(process: "subprocess.Popen[str]") -> None:
    """Let a started migrate command (`Migrations.migrate`) run."""
    assert process.stdin is not None
    process.stdin.write("go\n")
    process.stdin.close()


def lock_timeout_ms(sql: str) -> float:
    """The lock_timeout a revision's SQL sets (migrations/env.py), in ms; 0 when none."""
    found = re.search(r"^SET lock_timeout = (\d+)", sql, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


class Holder:
    """A session in a long transaction that read `table`: it holds ACCESS SHARE on it, which an
    ALTER TABLE's ACCESS EXCLUSIVE must wait for; released by `release()` (once)."""

    def __init__(self, database_url: str, table: str) -> None:
        self._connection = psycopg.connect(database_url, application_name="long-report")
        self._connection.execute(f"SELECT count(*) FROM {table}")  # noqa: S608  # a declared name
        self.released = threading.Event()

    def release(self) -> None:
        if self.released.is_set():
            return
        self._connection.rollback()
        self._connection.close()
        self.released.set()
