"""The same scenario through wrk, back to back with this engine: the engine's own calibration."""

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

AGREEMENT = 0.15
# wrk's Lua: random ids in the seeded range, and a JSON line with what the comparison needs.
_SCRIPT = """
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "%(prefix)s/" .. math.random(%(low)d, %(high)d))
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests": %%d, "duration_us": %%d, "errors": %%d, "p99_us": %%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(99)))
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def whole_seconds(seconds: float) -> int:
    """wrk takes whole seconds; the engine runs for the same number."""
    return max(1, round(seconds))


def wrk_by_id(
    url: str, prefix: str, ids: list[int], *, concurrency: int, seconds: int, threads: int
) -> dict[str, float]:
    """RPS and errors of wrk on the by-id read at `concurrency` connections (ids contiguous)."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "by_id.lua"
        script.write_text(_SCRIPT % {"prefix": prefix, "low": min(ids), "high": max(ids)})
        result = subprocess.run(
            [
                "wrk",
                f"-t{max(1, min(threads, concurrency))}",
                f"-c{concurrency}",
                f"-d{seconds}s",
                "-s",
                str(script),
                url,
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=True,
        )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    return {
        "rps": summary["requests"] / (summary["duration_us"] / 1e6),
        "errors": summary["errors"],
        "p99_ms": summary["p99_us"] / 1000,
    }
