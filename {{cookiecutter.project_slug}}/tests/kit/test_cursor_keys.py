"""kit/cursor_keys.py: the cursors' key comes from the migrated database, so every process of
one database signs alike; a rotation keeps the previous key accepted; CURSOR_SECRET overrides."""

from typing import Annotated

import pytest
import structlog
from pydantic import SecretStr

from {{ cookiecutter.package_name }}.db import Database
from {{ cookiecutter.package_name }}.kit import (
    Declared,
    ProblemError,
    Sortable,
    Str,
    cursor_key,
    cursor_keys,
    list_query,
)
from {{ cookiecutter.package_name }}.kit.cursor_keys import (
    accepted_keys,
    load_cursor_keys,
    rotate_cursor_key,
)
from {{ cookiecutter.package_name }}.kit.keyset import make_cursor, read_cursor
from {{ cookiecutter.package_name }}.kit.listing import ListQuery
from {{ cookiecutter.package_name }}.settings import Settings

from ..declared import run_sql


class _Fields(Declared):
    name: Annotated[str, Str(max_length=20), Sortable()]


QUERY = list_query(_Fields)
TABLE = "names"


@pytest.fixture(autouse=True)
def _keys_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a test loads is undone after it: the session's app keeps the keys it read."""
    monkeypatch.setattr(cursor_keys, "_database_keys", cursor_keys._database_keys)
    monkeypatch.setattr(cursor_keys, "_warned", False)
    # A logger used by an earlier test caches its configuration and would bypass the capture.
    monkeypatch.setattr(cursor_keys, "logger", structlog.get_logger(cursor_keys.__name__))


def _cursor(key: bytes) -> str:
    return make_cursor(QUERY.model_validate({"sort": "name"}), "a", 1, key, table=TABLE)


def _page_after(cursor: str) -> ListQuery:
    return QUERY.model_validate({"sort": "name", "cursor": cursor})


async def test_without_cursor_secret_a_process_signs_with_the_key_the_migrations_stored(
    database: Database, database_url: str
) -> None:
    await load_cursor_keys(database, None)
    stored = await run_sql(database_url, "SELECT signing_key FROM cursor_keys WHERE id = 1")
    assert len(stored) >= 32
    assert cursor_key(None) == stored
    assert cursor_key(None) != cursor_keys._PROCESS_KEY


async def test_after_a_rotation_new_cursors_use_the_new_key_and_old_ones_still_read(
    database: Database, settings: Settings
) -> None:
    await load_cursor_keys(database, None)
    before = cursor_key(None)
    issued = _cursor(before)
    await rotate_cursor_key(settings)
    await load_cursor_keys(database, None)  # what a pod does at its next start
    after = cursor_key(None)
    assert after != before
    assert accepted_keys(after) == (after, before)
    assert read_cursor(_page_after(issued), after, table=TABLE) == ("a", 1)
    await rotate_cursor_key(settings)
    await load_cursor_keys(database, None)
    with pytest.raises(ProblemError):  # two rotations later: no longer accepted
        read_cursor(_page_after(issued), cursor_key(None), table=TABLE)


async def test_cursor_secret_overrides_the_database_key(database: Database) -> None:
    await load_cursor_keys(database, SecretStr("shared"))
    assert cursor_key(SecretStr("shared")) == b"shared"
    assert accepted_keys(b"shared") == (b"shared",)


async def test_without_the_table_the_process_signs_with_a_key_of_its_own_and_says_so_once(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cursor_keys, "SELECT_KEYS", "SELECT * FROM no_cursor_keys_here")
    with structlog.testing.capture_logs() as logs:
        await load_cursor_keys(database, None)
        assert cursor_key(None) == cursor_key(None) == cursor_keys._PROCESS_KEY
    assert [log["event"] for log in logs] == ["cursor_key_of_this_process"]
