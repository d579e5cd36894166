"""The server's peak resident memory over one step: what the pod's memory is sized from.

The peak is the kernel's own high-water mark (VmHWM in /proc/<pid>/status), not a sampled
maximum: a buffer of a large page is a mapping of its own, returned to the system as soon as the
response is sent, and lives between any two samples. Writing 5 to /proc/<pid>/clear_refs (Linux
4.0 and later) resets the mark to the current RSS, so each step's peak is its own. Where the reset
is refused, the peak is the server's since it started: never below the step's own, so what it
sizes stays safe (said once). Without /proc there is no peak, and `make capacity` sizes no memory.
"""

import contextlib
from pathlib import Path

_KIB_PER_MIB = 1024
# What /proc/<pid>/clear_refs takes to reset the peak RSS alone (man 5 proc_pid_clear_refs):
# 1 to 4 would clear the pages' referenced and soft-dirty bits, which the server would pay for.
_RESET_PEAK = "5"


class PeakMemory:
    """`reset()` when a step starts, `peak_mib()` when it ends."""

    def __init__(self, pid: int, proc: Path = Path("/proc")) -> None:
        self._status = proc / str(pid) / "status"
        self._clear_refs = proc / str(pid) / "clear_refs"
        self.per_step = True  # False once a reset was refused: peaks since the server started

    def reset(self) -> None:
        if not self.per_step:
            return
        try:
            self._clear_refs.write_text(_RESET_PEAK)
        except OSError as error:
            self.per_step = False
            print(
                f"the server's peak RSS is its peak since it started, not each step's: {error}",
                flush=True,
            )

    def peak_mib(self) -> float | None:
        """The peak RSS in MiB since the last reset; None where the kernel does not say."""
        with contextlib.suppress(OSError, ValueError):
            for line in self._status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / _KIB_PER_MIB, 1)
        return None
