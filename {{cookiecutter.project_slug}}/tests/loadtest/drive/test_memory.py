"""The server's peak RSS over a step (loadtest/drive/memory.py), read from a real process's kernel
figures: a child that allocates, touches and frees what it is told."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from loadtest.drive.memory import PeakMemory

# Each line read: that many MiB allocated, every page touched (so resident), freed, then "ok".
# A buffer that large is a mapping of its own: freeing it returns it to the system at once.
_ALLOCATOR = """
import sys
for line in sys.stdin:
    buffer = bytearray(int(line) << 20)
    for offset in range(0, len(buffer), 4096):
        buffer[offset] = 1
    del buffer
    print("ok", flush=True)
"""
_MIB = 1 << 20


@pytest.fixture
def allocator() -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen(
        [sys.executable, "-c", _ALLOCATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            yield child
        finally:
            child.kill()


def _allocate(child: subprocess.Popen[str], mib: int) -> None:
    assert child.stdin is not None
    assert child.stdout is not None
    child.stdin.write(f"{mib}\n")
    child.stdin.flush()
    assert child.stdout.readline() == "ok\n"


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's peak RSS is Linux's")
def test_a_steps_peak_is_its_own_and_holds_memory_freed_before_the_step_ended(
    allocator: subprocess.Popen[str],
) -> None:
    memory = PeakMemory(allocator.pid)
    _allocate(allocator, 160)  # before the step: its peak must not count
    memory.reset()
    _allocate(allocator, 64)  # within the step, freed before it ends
    peak = memory.peak_mib()
    assert peak is not None
    assert 64 <= peak < 160
    assert memory.per_step
    # A sample at the step's end would have missed it: the 64 MiB are no longer resident.
    assert psutil.Process(allocator.pid).memory_info().rss / _MIB < 64


def test_a_refused_reset_leaves_the_peak_since_the_start_and_says_so_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "status").write_text(
        "Name:\tpython\nVmHWM:\t   75776 kB\nVmRSS:\t 70000 kB\n"
    )
    (tmp_path / "7" / "clear_refs").mkdir()  # not writable as a file: the reset is refused
    memory = PeakMemory(7, proc=tmp_path)
    memory.reset()
    memory.reset()
    assert not memory.per_step
    assert memory.peak_mib() == 74.0
    assert capsys.readouterr().out.count("its peak since it started") == 1


def test_no_peak_where_the_kernel_gives_none(tmp_path: Path) -> None:
    assert PeakMemory(7, proc=tmp_path).peak_mib() is None
