"""PostgreSQL measured like the host and the service: per step, from the database itself.

Over a step a thread samples `pg_stat_activity` every `SAMPLE_S` (what the service's active
backends wait on: `LWLock:WALWrite`, `IO:WalSync`, `Lock:relation`, ...; `CPU` when they wait on
nothing), and reads before and after it the WAL written and its write and sync time
(`pg_stat_io` for the WAL from PostgreSQL 18, `pg_stat_wal` before), the checkpoints begun
(`pg_stat_checkpointer` from 17, `pg_stat_bgwriter` before), and the autovacuum runs and dead
tuples of the tables (`pg_stat_user_tables`). Write and sync times count only where
`track_wal_io_timing` is on (the load test's own server turns it on); otherwise they read "-".

The connections it opens say `application_name=loadtest`, and their own backends are left out.
"""

import asyncio
import contextlib
import threading
import time
from collections import Counter
from typing import Any

import asyncpg

SAMPLE_S = 0.1
NAME = "loadtest"

_ACTIVITY = """
SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
  FROM pg_stat_activity
 WHERE backend_type = 'client backend'
   AND datname = current_database()
   AND state = 'active'
   AND application_name NOT LIKE 'loadtest%'
"""
_WAL_18 = """
SELECT (SELECT wal_bytes FROM pg_stat_wal)::float8 AS wal_bytes,
       sum(writes)::float8 AS wal_writes, sum(write_time) AS wal_write_ms,
       sum(fsyncs)::float8 AS wal_syncs, sum(fsync_time) AS wal_sync_ms
  FROM pg_stat_io WHERE object = 'wal'
"""
_WAL_14 = """
SELECT wal_bytes::float8, wal_write::float8 AS wal_writes, wal_write_time AS wal_write_ms,
       wal_sync::float8 AS wal_syncs, wal_sync_time AS wal_sync_ms
  FROM pg_stat_wal
"""
_CHECKPOINTS_17 = "SELECT (num_timed + num_requested)::float8 FROM pg_stat_checkpointer"
_CHECKPOINTS_OLD = "SELECT (checkpoints_timed + checkpoints_req)::float8 FROM pg_stat_bgwriter"
_TABLES = """
SELECT relname, autovacuum_count::float8, n_dead_tup::float8 FROM pg_stat_user_tables
"""


async def _counters(connection: asyncpg.Connection) -> dict[str, Any]:
    version = connection.get_server_version().major
    wal = await connection.fetchrow(_WAL_18 if version >= 18 else _WAL_14)
    checkpoints = await connection.fetchval(_CHECKPOINTS_17 if version >= 17 else _CHECKPOINTS_OLD)
    tables = {row[0]: (row[1], row[2]) for row in await connection.fetch(_TABLES)}
    return {**dict(wal or {}), "checkpoints": checkpoints, "tables": tables}


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    def minus(key: str) -> float | None:
        if before.get(key) is None or after.get(key) is None:
            return None
        return round(float(after[key]) - float(before[key]), 3)

    autovacuums = {
        table: int(count - before["tables"].get(table, (0.0, 0.0))[0])
        for table, (count, _) in after["tables"].items()
        if count > before["tables"].get(table, (0.0, 0.0))[0]
    }
    return {
        "wal_bytes": minus("wal_bytes"),
        "wal_writes": minus("wal_writes"),
        "wal_write_ms": minus("wal_write_ms"),
        "wal_syncs": minus("wal_syncs"),
        "wal_sync_ms": minus("wal_sync_ms"),
        "checkpoints": int(minus("checkpoints") or 0),
        "autovacuums": autovacuums,
        "dead_tuples": {table: int(dead) for table, (_, dead) in after["tables"].items() if dead},
    }


class Sampler:
    """`with Sampler(url) as sampled:` around a step; `sampled.result` holds the step's figures
    (None when the database could not be read: a step is never failed by its observer)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.result: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "Sampler":
        self._started = threading.Event()
        self._thread.start()
        self._started.wait(timeout=10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _sample(self) -> None:
        try:
            asyncio.run(self._sampling())
        except (TimeoutError, OSError, asyncpg.PostgresError):
            self.result = None
        finally:
            self._started.set()

    async def _sampling(self) -> None:
        connection = await asyncpg.connect(
            self.url, timeout=10, server_settings={"application_name": NAME}
        )
        try:
            before = await _counters(connection)
            self._started.set()
            waits: Counter[str] = Counter()
            samples = 0
            started = time.monotonic()
            while not self._stop.is_set():
                waits.update(row[0] for row in await connection.fetch(_ACTIVITY))
                samples += 1
                await asyncio.sleep(SAMPLE_S)
            seconds = time.monotonic() - started
            after = await _counters(connection)
        finally:
            with contextlib.suppress(Exception):
                await connection.close()
        self.result = _delta(before, after) | {
            "samples": samples,
            "seconds": round(seconds, 2),
            # Mean number of the service's active backends in each state over the step.
            "waits": {
                event: round(count / max(1, samples), 2) for event, count in waits.most_common()
            },
        }


def describe(figures: dict[str, Any] | None) -> str:
    """The step's database in one line: what its backends waited on, the WAL, checkpoints and
    autovacuum runs; the first is what a stalled write names."""
    if not figures:
        return "db -"
    waits = ", ".join(f"{event} {mean:g}" for event, mean in list(figures["waits"].items())[:3])
    text = f"db waits {waits or 'none'}"
    if figures.get("wal_syncs"):
        sync = figures.get("wal_sync_ms")
        each = "-" if not sync else f"{sync / figures['wal_syncs']:.2f}"
        written = (figures.get("wal_bytes") or 0) / 2**10
        text += f"; WAL {written:,.0f} KiB, {figures['wal_syncs']:.0f} syncs ({each} ms each)"
    if figures.get("checkpoints"):
        text += f"; {figures['checkpoints']} checkpoint(s) began"
    if figures.get("autovacuums"):
        text += "; autovacuum on " + ", ".join(sorted(figures["autovacuums"]))
    return text
