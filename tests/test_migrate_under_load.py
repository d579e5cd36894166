"""`make migrate-under-load` on a fresh bake, short and at a low rate: with the migrations'
timeouts every phase holds (no request failed, p99 within the budget plus lock_timeout, the
blocked revision gave up while the lock was held and succeeded once it was gone); without them
(MIGRATION_LOCK_TIMEOUT_MS=0) the blocked phase misses, the clients queued behind the ALTER."""

import json
from pathlib import Path
from typing import Any

import pytest

from .baking import VENV_BIN, bake, run

pytestmark = [pytest.mark.slow, pytest.mark.serial]

BLOCKED = "ACCESS EXCLUSIVE behind a long transaction"
# A few seconds a phase, a rate any machine serves: the verdict, not a capacity, is under test.
SHORT = "--hold-seconds 3 --seed-rows 2000"


def _under_load(project: Path, postgres_url: str, args: str, **env: str) -> tuple[int, str]:
    done = run(
        project, "make", "migrate-under-load", f"VENV={VENV_BIN.parent}", "RATE=100", "SECONDS=4",
        f"MIGRATE_UNDER_LOAD_ARGS={args}", DATABASE_URL=postgres_url, timeout=900, **env,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def _phases(project: Path) -> dict[str, Any]:
    (latest,) = sorted((project / "loadtest" / "results" / "migrate-under-load").glob("*.json"))[
        -1:
    ]
    return {phase["phase"]: phase for phase in json.loads(latest.read_text())["phases"]}


def test_migrations_under_load_hold_with_the_timeouts_and_the_blocked_one_misses_without(
    tmp_path: Path, postgres_url: str
) -> None:
    project = bake(tmp_path)
    code, output = _under_load(project, postgres_url, SHORT)
    assert code == 0, output[-4000:]
    phases = _phases(project)
    assert len(phases) == 5
    assert all(phase["held"] and phase["step"]["errors"] == 0 for phase in phases.values())
    blocked = phases[BLOCKED]
    assert blocked["gave_up_while_held"], blocked["report"]
    assert blocked["attempts"] >= 2
    assert blocked["step"]["p99_ms"] <= blocked["limit_ms"]

    without = {"MIGRATION_LOCK_TIMEOUT_MS": "0"}
    code, output = _under_load(
        project, postgres_url, f"{SHORT} --phases baseline,blocked", **without
    )
    assert code != 0, output[-4000:]
    assert "a phase MISSED" in output
    blocked = _phases(project)[BLOCKED]
    assert not blocked["held"]
    assert blocked["attempts"] == 1  # it waited for the lock, all the while the clients did
    assert blocked["step"]["p99_ms"] > blocked["limit_ms"]
