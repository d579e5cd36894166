"""`make bench-instructions` in miniature: two apps and an option under callgrind, real servers over
TCP; and its tables on given counts."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.instructions_report import markdown, merged, production_verdict
from tests.baking import TEMPLATE, VENV_BIN


@pytest.mark.slow
@pytest.mark.needs("valgrind", "wrk")
def test_instructions_per_request_are_counted_for_each_app_and_workload(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "bench.instructions", "--apps", "ceiling", "generated",
         "--workloads", "by_id", "delete", "--duration", "2", "--warmup", "1", "--rows", "2000",
         "--out", str(out)],
        cwd=TEMPLATE, env={**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    apps = json.loads((out / "instructions.json").read_text())["apps"]
    for workload in ("by_id", "delete"):
        ceiling, generated = (apps[name][workload] for name in ("ceiling", "generated"))
        assert ceiling["requests"] > 0
        assert generated["requests"] > 0
        # Counted from the servers' own work: the framework and the service's layers cost more
        # than the raw ASGI app, request for request.
        assert generated["per_request"] > 1.5 * ceiling["per_request"] > 0
        # Counted since the counters were zeroed: the start-up's billions (imports, the pool) are
        # not in it, a request is well under a few million.
        assert generated["per_request"] < 3_000_000
    assert "| generated/ceiling |" in (out / "instructions.md").read_text()


def _counts(date: str, **per_request: dict[str, float]) -> dict[str, Any]:
    """A written instructions.json of `date` with these apps' counts per request."""
    return {
        "date": date, "duration": 8, "warmup": 3, "connections": 8,
        "workloads": sorted({w for counts in per_request.values() for w in counts}),
        "apps": {app: {w: {"requests": 100, "instructions": 100 * n, "per_request": n}
                       for w, n in counts.items()} for app, counts in per_request.items()},
        "dates": dict.fromkeys(per_request, date),
    }  # fmt: skip


def test_an_option_is_priced_beside_the_generated_service_of_an_earlier_run() -> None:
    earlier = _counts("2026-01-01 00:00 UTC", generated={"create": 700_000, "by_id": 500_000},
                      ceiling={"create": 300_000, "by_id": 250_000})  # fmt: skip
    now = _counts("2026-02-01 00:00 UTC", idempotent_create={"create_keyed": 980_000},
                  ceiling={"create": 310_000, "by_id": 260_000})  # fmt: skip
    results = merged(now, earlier)
    assert results["dates"] == {"generated": "2026-01-01 00:00 UTC",
                                "ceiling": "2026-02-01 00:00 UTC",
                                "idempotent_create": "2026-02-01 00:00 UTC"}  # fmt: skip
    assert results["apps"]["ceiling"]["create"]["per_request"] == 310_000
    text = markdown(results)
    assert "`generated` from the run of 2026-01-01 00:00 UTC" in text
    # The keyed create beside the plain one; no figure where the option does not apply.
    label = "`idempotent_create`: a fresh Idempotency-Key on every create"
    assert f"| {label} | - | 980 (+280 k, +40.0 %) |" in text


@pytest.mark.slow
@pytest.mark.needs("valgrind", "wrk")
def test_an_option_is_counted_with_its_credentials_and_kept_beside_the_last_run(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    earlier = _counts("2026-01-01 00:00 UTC", generated={"by_id": 100_000})
    (out / "instructions.json").write_text(json.dumps(earlier))
    # jwt: its own bake, the issuer's settings and JWKS, a bearer token on every request (without
    # it every answer is a 401, and the run stops).
    result = subprocess.run(
        [sys.executable, "-m", "bench.instructions", "--apps", "jwt", "--workloads", "by_id",
         "--duration", "2", "--warmup", "1", "--rows", "2000", "--out", str(out)],
        cwd=TEMPLATE, env={**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((out / "instructions.json").read_text())
    assert results["apps"]["generated"] == earlier["apps"]["generated"]
    assert results["dates"]["generated"] == "2026-01-01 00:00 UTC"
    jwt = results["apps"]["jwt"]["by_id"]
    assert jwt["requests"] > 0
    assert 100_000 < jwt["per_request"] < 3_000_000
    (row,) = [line for line in (out / "instructions.md").read_text().splitlines()
              if line.startswith("| `jwt`: auth=jwt, one RS256 token")]  # fmt: skip
    assert " k, +" in row  # over the earlier run's generated by-id


def test_the_production_configuration_is_set_beside_fastapi_with_the_goal_checked() -> None:
    counts = _counts("2026-02-01 00:00 UTC",
                     production={"by_id": 700_000, "create_keyed": 800_000},
                     production_fastapi={"by_id": 3_500_000, "create_keyed": 960_000})  # fmt: skip
    counts["workloads"] = ["by_id", "create"]  # as asked for: a keyed create counts as a create
    text = markdown(merged(counts, _counts("2026-01-01 00:00 UTC", generated={"by_id": 500_000})))
    # Beside each other per workload, the keyed create in the create column, and the ratio.
    assert "| generated service | 700 | 800 |" in text
    assert "| FastAPI the usual way (bench/apps/production_fastapi.py) | 3,500 | 960 |" in text
    assert "| FastAPI / generated (goal: at least 1.3x) | 5.00x | 1.20x |" in text
    assert "**not met** on: create 1.20x." in text
    # Not an option of the options table, nor an app of the apps table.
    assert "`production`" not in text
    assert text.count("| generated service |") == 2  # the apps table's (by_id) and this one's


def test_the_production_goal_is_met_only_when_every_workload_reaches_it() -> None:
    assert production_verdict({"by_id": 5.0, "create": 1.3}).startswith("Goal (1.3x fewer")
    assert "met on by_id, create: the lowest ratio is 1.30x (create)" in production_verdict(
        {"by_id": 5.0, "create": 1.3}
    )
    assert "**not met** on: by_id 1.29x" in production_verdict({"by_id": 1.29, "create": 2.0})
    assert production_verdict({}).startswith("Goal not checked")


@pytest.mark.slow
@pytest.mark.needs("valgrind", "wrk")
def test_the_production_configuration_is_counted_beside_fastapi_the_usual_way(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    # Both under the production variant's settings with its token on every request, and a fresh
    # Idempotency-Key on every create (a 401, a 403 or a failed create stops the run). Two
    # connections: an RS256 verification under callgrind takes about 0.2 s on a busy host, and 8
    # requests served side by side all finished past the 2 s counted (none completed, CI).
    result = subprocess.run(
        [sys.executable, "-m", "bench.instructions", "--apps", "production", "production_fastapi",
         "--workloads", "by_id", "create", "--duration", "2", "--warmup", "1", "--rows", "2000",
         "--connections", "2", "--out", str(out)],
        cwd=TEMPLATE, env={**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    apps = json.loads((out / "instructions.json").read_text())["apps"]
    for name in ("production", "production_fastapi"):
        assert sorted(apps[name]) == ["by_id", "create_keyed"], name
        for figures in apps[name].values():
            assert figures["requests"] > 0
            assert 100_000 < figures["per_request"] < 20_000_000
    text = (out / "instructions.md").read_text()
    assert "| FastAPI / generated (goal: at least 1.3x) |" in text
    assert "Goal (1.3x fewer instructions)" in text
    assert "Goal (1.3x fewer instructions)" in result.stdout
