"""loadtest/report/runs.py: several runs side by side, the capacity's spread and the serving
rate's p99 over every run and over the runs whose host ran at full speed; `python -m loadtest runs`
prints them."""

import json
from pathlib import Path
from typing import Any

import pytest
from loadtest.__main__ import main
from loadtest.report import runs


def _step(p99: float, speed: float) -> dict[str, Any]:
    return {"p99_ms": p99, "evidence": {"host_speed": speed}}


def _run(capacity: float, serving_p99: float, speed: float) -> dict[str, Any]:
    """A results document with one scenario, its repeats and serving runs at host `speed`."""
    return {
        "scenarios": {
            "items.by_id": {
                "search": {"slo_rps": capacity, "repeats": [_step(20.0, speed)] * 3},
                "serving": {
                    "p99_median_ms": serving_p99,
                    "runs": [_step(serving_p99, speed)] * 3,
                },
            }
        }
    }


def test_the_spread_is_the_range_over_the_median() -> None:
    assert runs.spread([900.0, 1000.0, 1100.0]) == pytest.approx(0.2)
    assert runs.spread([1000.0]) is None


def test_a_run_is_at_full_speed_only_when_every_repeat_and_serving_run_was() -> None:
    assert runs.at_full_speed(_run(1000, 8.0, 0.95)["scenarios"]["items.by_id"])
    slowed = _run(1000, 8.0, 0.95)["scenarios"]["items.by_id"]
    slowed["serving"]["runs"][1] = _step(8.0, 0.6)
    assert not runs.at_full_speed(slowed)


def test_the_table_keeps_the_slowed_run_out_of_the_full_speed_figures() -> None:
    table = runs.table([_run(1000, 8.0, 1.0), _run(1100, 9.0, 0.95), _run(600, 40.0, 0.55)])
    row = table.splitlines()[2]
    assert "| items.by_id | 1,000 / 1,100 / 600 | 50% | 8.0 / 9.0 / 40.0 | 9.0 |" in row
    # Two runs at full speed: 1,000 and 1,100 RPS (10 % of their median 1,050), p99 8.0 and 9.0.
    assert row.endswith("| 2 of 3, 10%, 8.5 |")


def test_the_command_prints_the_latest_runs_and_leaves_k6_results_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, capacity in (("20260101T000000Z", 500), ("20260102T000000Z", 1000)):
        (tmp_path / f"{name}.json").write_text(json.dumps(_run(capacity, 8.0, 1.0)))
    (tmp_path / "k6-20260103T000000Z.json").write_text("{}")
    assert main(["--results", str(tmp_path), "runs", "--count", "1"]) == 0
    printed = capsys.readouterr().out
    assert "Runs: 20260102T000000Z.json." in printed
    assert "| items.by_id | 1,000 |" in printed
