"""`python -m {{ cookiecutter.package_name }} migrate` (migrate.py) on databases of its own: a revision
blocked by a long transaction, a database a newer release migrated (a rollback), and a unique
index built on duplicates (`make field ...:unique`), then on clean data.

The command runs once from empty to the project's head, as a first deploy's Job does (the import
test reads that run); the other tests start from copies of that database, each with a copy of the
project's migrations with a revision of its own added, so the project's migrations are never
touched.
"""

import asyncio
import importlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from scaffold.generate import VERSIONS, next_revision
from scaffold.revision import add_field

from .conftest import PROJECT_ROOT, with_database
from .declared import first_resource, new_body, run_sql

PACKAGE = "{{ cookiecutter.package_name }}"
REVISION = '''"""A revision of the tests."""

from alembic import op

revision = "{revision}"
down_revision = "{down}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("{statement}")
'''
# Long enough for a loaded machine, bounded: a migration that never reports would hang the suite.
REPORTED_WITHIN_S = 60.0


@pytest.fixture(scope="module")
async def first_migration(server_url: str) -> AsyncIterator[tuple[str, int, str]]:
    """A first deploy's Job: the migrate command on an empty database, which it leaves at the
    project's head; that database's name, the command's exit code and what it wrote to stderr
    (with the import times, PYTHONPROFILEIMPORTTIME). The tests below start from copies of it:
    each `migrate` pays Python's and alembic's start-up, about a second of CPU."""
    name = f"test_migrate_head_{secrets.token_hex(4)}"
    await run_sql(server_url, f'CREATE DATABASE "{name}"')
    url = with_database(server_url, name)
    try:
        code, stderr = await _migrated(PROJECT_ROOT, url, PYTHONPROFILEIMPORTTIME="1")
        yield name, code, stderr
    finally:
        await run_sql(server_url, f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
async def at_head_url(server_url: str, first_migration: tuple[str, int, str]) -> AsyncIterator[str]:
    """A database of its own at the project's head: a copy of the first migration's."""
    head, code, stderr = first_migration
    assert code == 0, stderr
    name = f"test_migrate_{secrets.token_hex(4)}"
    await run_sql(server_url, f'CREATE DATABASE "{name}" TEMPLATE "{head}"')
    yield with_database(server_url, name)
    await run_sql(server_url, f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """What the migrate command reads (alembic.ini, migrations/) and what `make field` edits."""
    for part in ("migrations", "src"):
        shutil.copytree(
            PROJECT_ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("*.pyc")
        )
    shutil.copy(PROJECT_ROOT / "alembic.ini", tmp_path)
    return tmp_path


def _add_revision(root: Path, statement: str) -> str:
    revision, down = next_revision(root)
    text = REVISION.format(revision=revision, down=down, statement=statement)
    (root / VERSIONS / f"{revision}_of_the_tests.py").write_text(text)
    return revision


async def _migrate(root: Path, url: str, **env: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", PACKAGE, "migrate",
        cwd=root,
        env={**os.environ, "DATABASE_URL": url, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def _finished(process: asyncio.subprocess.Process) -> tuple[int, str]:
    _, stderr = await asyncio.wait_for(process.communicate(), REPORTED_WITHIN_S)
    assert process.returncode is not None
    return process.returncode, stderr.decode()


async def _migrated(root: Path, url: str, **env: str) -> tuple[int, str]:
    return await _finished(await _migrate(root, url, **env))


async def _holding_the_table(url: str, table: str) -> asyncpg.Connection:
    """A session in a long transaction that read `table`: it holds ACCESS SHARE on it."""
    holder = await asyncpg.connect(url, server_settings={"application_name": "long-report"})
    await holder.execute("BEGIN")
    await holder.fetchval(f"SELECT count(*) FROM {table}")
    return holder


async def test_a_revision_blocked_by_a_long_transaction_is_tried_again_and_applied_once_it_ends(
    project: Path, at_head_url: str
) -> None:
    table = first_resource().table
    _add_revision(project, f"ALTER TABLE {table} ADD COLUMN migrate_probe text")
    holder = await _holding_the_table(at_head_url, table)
    try:
        process = await _migrate(project, at_head_url, MIGRATION_RETRY_PAUSE_S="0.2")
        assert process.stderr is not None
        # The ALTER waits for ACCESS EXCLUSIVE behind the holder, gives up at its lock_timeout
        # and says who held the lock.
        line = await asyncio.wait_for(process.stderr.readline(), REPORTED_WITHIN_S)
        pid = holder.get_server_pid()
        assert line.startswith(b"Attempt 1 of 10: "), line
        assert f"pid {pid} (long-report, idle in transaction".encode() in line, line
    finally:
        await holder.execute("ROLLBACK")
        await holder.close()
    code, _ = await _finished(process)
    assert code == 0
    columns = f"SELECT count(*) FROM pg_attribute WHERE attrelid = '{table}'::regclass"
    assert await run_sql(at_head_url, columns + " AND attname = 'migrate_probe'") == 1


async def test_the_migrate_command_runs_without_importing_the_service(
    first_migration: tuple[str, int, str],
) -> None:
    """The migration Job's start-up: alembic, not FastAPI and the routes (__main__.py imports
    each command's modules in the command)."""
    _, code, stderr = first_migration
    assert code == 0, stderr
    imported = {line.rpartition("|")[2].strip() for line in stderr.splitlines()}
    assert "alembic" in imported  # the import times were written
    service = {f"{PACKAGE}.serving", f"{PACKAGE}.kit", "fastapi", "starlette"}
    assert not service & imported


async def test_a_revision_still_blocked_after_the_last_attempt_fails_naming_the_lock_holder(
    project: Path, at_head_url: str
) -> None:
    table = first_resource().table
    _add_revision(project, f"ALTER TABLE {table} ADD COLUMN migrate_probe text")
    holder = await _holding_the_table(at_head_url, table)
    try:
        code, stderr = await _migrated(
            project, at_head_url, MIGRATION_ATTEMPTS="2", MIGRATION_RETRY_PAUSE_S="0.1"
        )
        pid = holder.get_server_pid()
    finally:
        await holder.close()
    assert code == 1
    assert "Gave up after 2 attempts: a revision could not take its lock" in stderr
    assert f"it was held by pid {pid} (long-report, idle in transaction" in stderr


async def test_the_previous_releases_migrate_succeeds_on_a_database_one_revision_ahead(
    project: Path, at_head_url: str
) -> None:
    """A rollback: the newer release (the copy, one revision more) migrated the database, then
    the previous release's migration Job (this project's command) runs against it."""
    ahead = _add_revision(project, f"ALTER TABLE {first_resource().table} ADD COLUMN newer text")
    assert (await _migrated(project, at_head_url))[0] == 0
    code, stderr = await _migrated(PROJECT_ROOT, at_head_url)
    assert code == 0, stderr
    assert f"The database is at {ahead}, which this release does not know" in stderr
    # What plain alembic does there, the failure this command spares a rollback.
    alembic = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "alembic", "upgrade", "heads",
        cwd=PROJECT_ROOT, env={**os.environ, "DATABASE_URL": at_head_url},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(alembic.communicate(), REPORTED_WITHIN_S)
    assert alembic.returncode != 0
    assert f"Can't locate revision identified by '{ahead}'" in output.decode()


UNIQUE_INDEX = """
    SELECT index.indisvalid
      FROM pg_index AS index
     WHERE index.indexrelid = to_regclass($1)
"""


async def test_a_unique_field_added_on_duplicates_fails_then_builds_once_they_are_gone(
    project: Path, at_head_url: str
) -> None:
    """`make field ...:unique` on a table whose rows share the value: the build fails and leaves
    an invalid index; once the duplicate is gone, migrating again drops it and builds anew."""
    resource = first_resource()
    table = resource.table
    insert = importlib.import_module(resource.fields.__module__.rpartition(".")[0] + ".sql").INSERT
    for _ in range(2):
        await run_sql(at_head_url, insert, json.dumps(new_body(resource)))
    added, _, _ = add_field(project, table, "migrate_key:str(20)?:unique")
    first_revision = added.name.partition("_")[0]
    alembic = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "alembic", "upgrade", first_revision,
        cwd=project, env={**os.environ, "DATABASE_URL": at_head_url},
    )  # fmt: skip
    assert await asyncio.wait_for(alembic.wait(), REPORTED_WITHIN_S) == 0
    await run_sql(at_head_url, f"UPDATE {table} SET migrate_key = 'same'")

    code, stderr = await _migrated(project, at_head_url)
    assert code == 1
    assert "could not create unique index" in stderr
    index = f"{table}_migrate_key_key"
    assert await run_sql(at_head_url, UNIQUE_INDEX, index) is False  # left invalid

    first = f"(SELECT min(id) FROM {table})"
    await run_sql(at_head_url, f"UPDATE {table} SET migrate_key = NULL WHERE id = {first}")
    code, stderr = await _migrated(project, at_head_url)
    assert code == 0, stderr
    assert await run_sql(at_head_url, UNIQUE_INDEX, index) is True
    constraint = "SELECT contype::text FROM pg_constraint WHERE conname = $1"
    assert await run_sql(at_head_url, constraint, index) == "u"
