"""The database a run states beside its verdict: its settings, and its disk's fsync time by
pg_test_fsync, which is stopped once it has written the one figure the run states."""

import time
from pathlib import Path

import pytest
from loadtest.drive import postgres

# pg_test_fsync's first table holds five methods, a test of FSYNC_SECONDS each; its whole run is
# five tables, some twenty tests.
FIRST_TABLE_SECONDS = 5 * postgres.FSYNC_SECONDS


def test_the_disks_fsync_is_the_servers_method_read_from_the_first_table_alone(
    database_url: str,
) -> None:
    found = postgres.settings(database_url)
    if "disk" not in found:
        pytest.skip("the test database's data directory is not on this machine")
    started = time.monotonic()
    fsync = postgres.fsync_speed(found)
    elapsed = time.monotonic() - started
    if "skipped" in fsync:
        pytest.skip(fsync["skipped"])
    assert fsync["method"] == found["wal_sync_method"]
    assert fsync["ops_per_s"] > 0
    assert fsync["ms_per_sync"] > 0
    assert elapsed < FIRST_TABLE_SECONDS + 5, elapsed  # not its other four tables
    assert not list(Path(fsync["file"]).glob("pg_test_fsync.*"))  # its scratch file is gone
