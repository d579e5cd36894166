"""The report of a load test: table, JSON, Markdown with the verdicts and a PNG chart."""

import json
from pathlib import Path
from typing import Any

import numpy as np
from loadtest.report import chart, markdown, table


def _step(
    concurrency: int | None, rps: float, p99: float, rate: float | None = None
) -> dict[str, Any]:
    return {
        "concurrency": concurrency, "rate": rate, "seconds": 5.0, "requests": int(rps * 5),
        "errors": 0, "rps": rps, "p50_ms": p99 / 3, "p95_ms": p99 / 1.5, "p99_ms": p99,
        "max_ms": p99 * 2, "client_cpu": 20.0, "server_cpu": 95.0,
    }  # fmt: skip


def _results(misses: list[str]) -> dict[str, Any]:
    steps = [_step(1, 600, 2), _step(2, 1100, 3), _step(4, 1500, 4), _step(8, 1550, 9)]
    budget = {"min_rps": 1000, "max_p99_ms": 50.0, "max_error_rate": 0.0, "serving_fraction": 0.7}
    return {
        "started_at": "2025-01-01T00:00:00+00:00",
        "target": {
            "url": "http://127.0.0.1:8000",
            "pid": 1,
            "pinned": "core 0",
            "started_here": True,
        },
        "client": {"processes": 2, "cores": [1], "capacity_rps": 20000},
        "scenarios": {
            "by_id": {
                "budget": budget,
                "steps": steps,
                "verdict": "knee",
                "knee_index": 2,
                "search": {
                    "slo_rps": 1320.0,
                    "start_rps": 900.0,
                    "step_seconds": 5.0,
                    "connections": 32,
                    "spread": {
                        "p99_min_ms": 31.0,
                        "p99_median_ms": 35.5,
                        "p99_max_ms": 41.0,
                        "client_cpu_max": 48.0,
                        "server_cpu_median": 91.0,
                    },
                    "client_bound": False,
                    "trials": [_step(None, 900, 7.5, rate=900), _step(None, 1400, 80, rate=1400)],
                    "repeats": [_step(None, 1320, p99, rate=1320) for p99 in (31, 35.5, 41)],
                },
                "serving": {
                    "fraction": 0.7,
                    "rate": 924.0,
                    "p99_median_ms": 6.5,
                    "runs": [_step(None, 924, p99, rate=924) for p99 in (5.5, 6.5, 9)],
                    "capacity_rps": 1320.0,
                    "attempts": [
                        {
                            "capacity_rps": 1320.0,
                            "rate": 924.0,
                            "held": True,
                            "p99_median_ms": 6.5,
                            "runs": 3,
                        }
                    ],
                },
                "capacity_rps": 1320.0,
                "error_rate": 0.0,
                "misses": misses,
            }
        },
        "misses": misses,
        "passed": not misses,
        "wrk_check": {
            "concurrency": 4,
            "seconds": 5,
            "engine_rps": 1500,
            "wrk_rps": 1560,
            "ratio": 0.96,
            "agree": True,
        },
        "capacity_text": "Capacity of one pod ...",
    }


def test_the_markdown_states_the_slo_capacity_its_spread_the_knee_and_the_cross_check() -> None:
    text = markdown.markdown(_results([]), "chart.png")
    assert "**Budget: met.**" in text
    assert (
        "| by_id | 1,320 | 1,320 | 1,000 | 31.0 / 35.5 / 41.0 | 6.5 at 924 RPS (70%) | 48 | 91 | -; - |"
        " - / - | 1,500 @ 4 (knee) |"
    ) in text
    assert "SLO capacity **1,320 RPS**" in text
    assert "| 4 | - | 1,500 |" in text
    assert text.count("| knee |") == 1
    assert text.count("| trial: ") == 2
    assert text.count("| repeat: ") == 3
    assert text.count("| at 70%: ") == 3
    assert "this engine 1,500 RPS, wrk 1,560 RPS" in text
    assert "p99 against the offered rate](chart.png)" in text


def test_the_summary_gives_the_time_stolen_from_the_cores_over_the_open_loop_steps() -> None:
    results = _results([])
    scenario = results["scenarios"]["by_id"]
    steps = [*scenario["search"]["trials"], *scenario["search"]["repeats"]]
    steps += scenario["serving"]["runs"]
    for index, step in enumerate(steps):  # 8 steps: 0, 2, ... 14 % and 1, 4, ... 22 %
        step["stolen"], step["stolen_elsewhere"] = 2.0 * index, 1.0 + 3 * index
    text = markdown.markdown(results, None)
    assert "| 91 | 7 / 14; 12 / 22 | - / - | 1,500 @ 4 (knee) |" in text
    row = table.row(steps[-1])
    assert row.split()[-2:] == ["14", "22"]


def test_the_summary_gives_the_servers_peak_rss_over_the_scenario_and_at_the_serving_rate() -> None:
    results = _results([])
    scenario = results["scenarios"]["by_id"]
    scenario["peak_rss_mib"], scenario["serving"]["peak_rss_mib"] = 74.6, 71.2
    text = markdown.markdown(results, None)
    assert "| -; - | 74.6 / 71.2 | 1,500 @ 4 (knee) |" in text
    assert "Server peak RSS: the kernel's high-water mark" in text


def test_the_markdown_lists_every_miss() -> None:
    text = markdown.markdown(_results(["MISS by_id: one", "MISS by_id: two"]), None)
    assert "**Budget: MISSED.**" in text
    assert "- MISS by_id: one\n- MISS by_id: two\n" in text


def test_write_leaves_json_markdown_and_a_png_chart(tmp_path: Path) -> None:
    paths = markdown.write(_results([]), tmp_path, "20250101T000000Z")
    assert json.loads(paths["json"].read_text())["scenarios"]["by_id"]["knee_index"] == 2
    assert paths["png"].read_bytes().startswith(b"\x89PNG")
    assert "20250101T000000Z.png" in paths["md"].read_text()


def test_the_console_row_lines_up_with_the_header() -> None:
    assert len(table.row(_step(4, 1500, 4))) == len(table.header())


def test_a_trial_that_missed_its_p99_says_which_of_the_services_suspects_moved() -> None:
    results = _results([])
    missed = results["scenarios"]["by_id"]["search"]["trials"][1]
    missed["evidence"] = {
        "loop_lag_count": 10, "loop_lag_max_ms": 100.0, "gc_pause_count": 4,
        "gc_pause_max_ms": 5.0, "gc_pause_ms_per_s": 2.5, "pool_wait_count": 7000,
        "pool_wait_max_ms": 0.1, "admission_refused": 0, "moved": ["loop lag 1 -> 100 ms"],
    }  # fmt: skip
    text = markdown.markdown(results, "chart.png")
    assert "| trial: lag ≤100 ms, gc 2.5 ms/s (4, ≤5 ms), pool wait ≤0.1 ms, refused 0; " in text
    assert "moved: loop lag 1 -> 100 ms |" in text


def test_the_chart_draws_the_rate_search_beside_the_sweep_with_the_p99_budget() -> None:
    results = _results([])
    sweep_axes, search_axes = chart.figure(results).axes[:2]
    assert sweep_axes.get_xlabel() == "concurrency (closed loop)"
    assert search_axes.get_title() == "by_id: rate search"
    assert search_axes.get_xlabel() == "offered rate (open loop, RPS)"
    points = {
        (float(x), float(y))
        for line in search_axes.get_lines()
        if line.get_linestyle() == "None"
        for x, y in np.asarray(line.get_xydata(), dtype=float).tolist()
    }
    assert points == {
        (900, 7.5), (1400, 80), (1320, 31), (1320, 35.5), (1320, 41), (924, 5.5), (924, 6.5),
        (924, 9),
    }  # fmt: skip
    labels = [line.get_label() for line in search_axes.get_lines()]
    assert "p99 budget 50 ms" in labels
    assert "at the serving rate (70%)" in labels
    assert "SLO capacity 1,320 RPS" in labels


def test_the_markdown_shows_each_serving_rate_tried_and_the_capacity_claimed_from_the_one_that_held() -> (
    None
):
    results = _results(["MISS by_id: capacity whose serving runs held 990 RPS < budget 1,000 RPS"])
    scenario = results["scenarios"]["by_id"]
    scenario["capacity_rps"] = scenario["serving"]["capacity_rps"] = 1056.0
    scenario["serving"]["attempts"] = [
        {"capacity_rps": 1320.0, "rate": 924.0, "held": False, "p99_median_ms": 80.0, "runs": 3},
        {"capacity_rps": 1056.0, "rate": 739.2, "held": True, "p99_median_ms": 6.0, "runs": 3},
    ]
    text = markdown.markdown(results, None)
    assert (
        "- at 70% of 1,320 RPS (924 RPS): p99 median 80.0 ms over 3 runs, MISSED in a run" in text
    )
    assert "- at 70% of 1,056 RPS (739 RPS): p99 median 6.0 ms over 3 runs, every run held" in text
    assert "Capacity claimed (the Helm values' source): **1,056 RPS**." in text
    assert "| by_id | 1,320 | 1,056 | 1,000 |" in text


def test_the_markdown_states_the_database_the_run_wrote_to_and_its_disks_fsync() -> None:
    results = _results([])
    results["database"] = {
        "settings": {"wal_sync_method": "fdatasync", "synchronous_commit": "on"},
        "fsync": {"method": "fdatasync", "ops_per_s": 1250.0, "ms_per_sync": 0.8, "file": "/x"},
    }
    text = markdown.markdown(results, None)
    assert "Database: `wal_sync_method=fdatasync`, `synchronous_commit=on`." in text
    assert (
        "Its disk's fsync (pg_test_fsync, once a run): fdatasync: 0.8 ms a sync (1,250/s)." in text
    )


def test_the_report_says_what_a_write_scenarios_tail_owes_to_the_database_from_its_own_runs() -> (
    None
):
    results = _results([])
    results["database"] = {
        "settings": {},
        "fsync": {"method": "fdatasync", "ms_per_sync": 4.3, "ops_per_s": 233.0},
    }
    db = {
        "waits": {"LWLock:WALWrite": 2.5, "IO:WalSync": 0.9}, "seconds": 5.0, "wal_syncs": 600.0,
        "wal_sync_ms": 2700.0, "checkpoints": 1, "autovacuums": {"items": 1},
        "dead_tuples": {"items": 1200},
    }  # fmt: skip
    for step in results["scenarios"]["by_id"]["serving"]["runs"]:
        step["evidence"] = {"db": db}
    text = markdown.markdown(results, None)
    assert "## What the write tail owes to the database" in text
    assert "the disk's own fsync by fdatasync: 4.3 ms (pg_test_fsync)" in text
    assert (
        "| by_id | 6.5 | LWLock:WALWrite 2.50, IO:WalSync 0.90 | 120 | 4.50 | 3 | 3 | 1,200 |"
        in text
    )
