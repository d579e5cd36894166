"""The worker's cron schedule with two worker processes on one queue: each tick runs once."""

import asyncio
import itertools
import signal
import time
from datetime import datetime
from pathlib import Path

import orjson

from .workers import worker

# Every 2 seconds: a sixth cron field counts seconds.
EVERY_2_SECONDS = "* * * * * */2"
WATCH_SECONDS = 9.0


def _events(log: Path, event: bytes) -> list[float]:
    """When `event` was logged in `log`."""
    times = []
    for line in log.read_bytes().splitlines():
        if b'"event":"' + event + b'"' in line:
            stamp = orjson.loads(line)["timestamp"].replace("Z", "+00:00")
            times.append(datetime.fromisoformat(stamp).timestamp())
    return times


async def _started(log: Path, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _events(log, b"worker_started"):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_cron_tick_runs_once_with_two_workers(database_url: str, tmp_path: Path) -> None:
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    env = {"JOBS_PRUNE_CRON": EVERY_2_SECONDS, "LOG_LEVEL": "info"}
    with (
        worker(logs[0], database_url, "", **env) as first,
        worker(logs[1], database_url, "", **env) as second,
    ):
        for log in logs:
            assert await _started(log, 60), log.read_text()[-2000:]
        started = time.time()
        await asyncio.sleep(WATCH_SECONDS)
        for process in (first, second):
            process.send_signal(signal.SIGTERM)  # exits 0 with its log flushed
            assert await asyncio.to_thread(process.wait, 30) == 0
    runs = sorted(at for log in logs for at in _events(log, b"job_log_pruned") if at >= started)
    # About one run per 2-second tick over the watch.
    assert len(runs) >= 3, [log.read_text()[-1500:] for log in logs]
    assert len(runs) <= WATCH_SECONDS / 2 + 1, runs
    # A tick run by both workers shows as two runs within a moment of each other.
    gaps = [later - earlier for earlier, later in itertools.pairwise(runs)]
    assert min(gaps) > 1.0, gaps
