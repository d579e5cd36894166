"""devdb (`make dev`): a Ctrl-C reaches the command once, and PostgreSQL stops after it; with
--attach a command uses the server `make dev` runs."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from devdb import ThrowawayPostgres, free_port

from .conftest import PROJECT_ROOT

# Stands in for the server: connects, says so, and on Ctrl-C still works in the database for a
# second (as uvicorn's shutdown drains requests and closes its pool), then says how many
# interrupts it got.
COMMAND = """
import asyncio, os, signal, asyncpg

async def main() -> None:
    connection = await asyncpg.connect(os.environ["DATABASE_URL"])
    interrupts = asyncio.Queue()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, interrupts.put_nowait, 1)
    print("ready", flush=True)
    await interrupts.get()
    await connection.execute("SELECT pg_sleep(1)")
    print("interrupts:", 1 + interrupts.qsize(), flush=True)
    await connection.close()

asyncio.run(main())
"""


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Outside pytest's temporary root, which a concurrent pytest session may reset.
    folder = Path(tempfile.mkdtemp(prefix="devdb-test-"))
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "postmaster.pid").read_text().split()[0])


def test_ctrl_c_reaches_the_command_once_and_postgres_stops_after_it(data_dir: Path) -> None:
    devdb = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "devdb",
            "--dir",
            str(data_dir),
            "--",
            sys.executable,
            "-c",
            COMMAND,
        ],
        cwd=PROJECT_ROOT,
        env={key: value for key, value in os.environ.items() if key != "DATABASE_URL"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group like a terminal's, signalled as one below
    )
    try:
        assert devdb.stdout is not None
        assert devdb.stdout.readline().strip() == "ready"
        # pg_ctl starts PostgreSQL in a session of its own: the terminal's Ctrl-C never reaches it.
        assert os.getsid(_postmaster_pid(data_dir)) != os.getsid(devdb.pid)
        os.killpg(devdb.pid, signal.SIGINT)
        out, err = devdb.communicate(timeout=60)
    finally:
        if devdb.poll() is None:
            os.killpg(devdb.pid, signal.SIGKILL)
    # A second SIGINT would be a second Ctrl-C: uvicorn would skip its graceful shutdown.
    assert out.strip() == "interrupts: 1", err
    assert devdb.returncode == 0, err
    assert not (data_dir / "postmaster.pid").exists()  # and PostgreSQL was stopped after it


def _devdb(data_dir: Path, *command: str, attach: bool = False) -> subprocess.CompletedProcess[str]:
    options = ["--attach"] if attach else []
    return subprocess.run(
        [sys.executable, "-m", "devdb", "--dir", str(data_dir), *options, "--", *command],
        cwd=PROJECT_ROOT,
        env={key: value for key, value in os.environ.items() if key != "DATABASE_URL"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_load_tests_server_starts_beside_a_running_dev_server_and_a_clash_is_one_line(
    data_dir: Path,
) -> None:
    dev = ThrowawayPostgres(data_dir)  # `make dev`'s, running
    dev.start()
    try:
        beside = _devdb(data_dir.parent / "loadtest", sys.executable, "-c", "print('served')")
        assert beside.returncode == 0, beside.stderr
        assert beside.stdout.strip() == "served"
        clash = _devdb(data_dir, "true")  # the same folder: what `make loadtest` did before
    finally:
        dev.stop()
    assert clash.returncode == 1
    assert clash.stderr.strip().splitlines()[-1] == (
        f"devdb: cannot start PostgreSQL: a server is already running in {data_dir}"
    )
    assert "Traceback" not in clash.stderr


def test_with_attach_a_command_runs_on_the_server_already_running_in_the_folder(
    data_dir: Path,
) -> None:
    dev = ThrowawayPostgres(data_dir)  # `make dev`'s, running
    dev.start()
    try:
        printed = "import os; print(os.environ['DATABASE_URL'])"
        attached = _devdb(data_dir, sys.executable, "-c", printed, attach=True)
        assert (data_dir / "postmaster.pid").exists()  # left running for `make dev`
    finally:
        dev.stop()
    assert attached.returncode == 0, attached.stderr
    assert attached.stdout.strip() == dev.url
    # With none running, it starts one for the command and stops it after, as without --attach.
    started = _devdb(data_dir, sys.executable, "-c", printed, attach=True)
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().startswith("postgresql://postgres@127.0.0.1:")
    assert not (data_dir / "postmaster.pid").exists()


def test_make_loadtest_and_perf_gate_use_servers_of_their_own_not_make_devs() -> None:
    planned = subprocess.run(
        ["make", "-n", "loadtest", "perf-gate", "BASE=HEAD"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    loadtest, gate = (line for line in planned.splitlines() if "-m devdb" in line)
    assert "--dir .devdb/loadtest --set track_wal_io_timing=on" in loadtest
    assert "--dir .devdb/perf-gate" in gate


def test_free_port_never_hands_out_a_port_twice_in_a_process() -> None:
    # The kernel draws from some 28,000 free ports: 2,000 plain draws repeated 131 of them here.
    ports = [free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports)
