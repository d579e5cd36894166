"""The database a run states beside its verdict: its settings, and its disk's fsync time by
pg_test_fsync, which is stopped once it has written the one figure the run states."""

import os
import time
from pathlib import Path

import pytest
from loadtest.drive import postgres

# pg_test_fsync's first table holds five methods, a test of FSYNC_SECONDS each; its whole run is
# five tables, some seventeen tests. Time for its 16 MB scratch file on a busy disk, besides.
FIRST_TABLE_SECONDS = 5 * postgres.FSYNC_SECONDS
SCRATCH_SECONDS = 8


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
    assert elapsed < FIRST_TABLE_SECONDS + SCRATCH_SECONDS, elapsed  # not its other four tables
    assert not (Path(fsync["file"]) / f"pg_test_fsync.{os.getpid()}").exists()  # scratch gone
