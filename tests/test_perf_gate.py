"""The generated repository's regression gate (`make perf-gate`, loadtest/gate/): a CI job on
pull requests against the base branch; on a committed bake, an unchanged service passes and a
deliberate slowdown of one route fails the gate, which names that route's scenario and leaves the
unchanged ones alone. Two short rounds on two scenarios keep it near a minute."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .baking import bake, run

# Extra JSON round trips of a by-id answer's body: about 1.6 us each on an idle core, so the by-id
# route costs roughly twice what it did, far beyond the noise of a shared machine.
ROUND_TRIPS = 200
# The test's own margin: generous, since it judges the median of 2 rounds of 1 s (the pairs of
# an idle machine's rounds differ by a few percent; the slowdown doubles the route's cost).
MARGIN = "25"
SLOWDOWN = f"""
    for _ in range({ROUND_TRIPS}):  # the deliberate slowdown
        orjson.loads(orjson.dumps({{"id": item_id, "name": "x" * 60, "tags": list(range(20))}}))
"""


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default bake in a git repository of its own, everything committed."""
    project = bake(tmp_path_factory.mktemp("perf-gate"))
    identity = ["-c", "user.name=Gate", "-c", "user.email=gate@example.com"]
    for command in (["init", "-q"], ["add", "-A"], [*identity, "commit", "-qm", "base"]):
        subprocess.run(["git", *command], cwd=project, check=True, capture_output=True)
    return project


def _gate(project: Path, postgres_url: str, scenarios: str) -> subprocess.CompletedProcess[str]:
    return run(
        project, sys.executable, "-m", "loadtest.gate", "--base", "HEAD", "--margin", MARGIN,
        "--rounds", "2", "--seconds", "1", "--rows", "2000", "--scenarios", scenarios,
        timeout=300, DATABASE_URL=postgres_url,
    )  # fmt: skip


def _slow_down_get_by_id(project: Path) -> None:
    routes = next((project / "src").glob("*/items/routes.py"))
    before, after = routes.read_text().split("async def get_item(", 1)
    signature, body = after.split(") -> Response:\n", 1)
    routes.write_text(
        "import orjson\n" + before + "async def get_item(" + signature + ") -> Response:\n"
        + SLOWDOWN.lstrip("\n") + body
    )  # fmt: skip


@pytest.mark.serial
@pytest.mark.needs("wrk")
def test_the_gate_passes_an_unchanged_service_and_fails_a_slower_route_naming_its_scenario(
    committed: Path, postgres_url: str
) -> None:
    unchanged = _gate(committed, postgres_url, "items.by_id")
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "perf-gate: no scenario costs more than +25 %" in unchanged.stdout
    _slow_down_get_by_id(committed)
    slower = _gate(committed, postgres_url, "items.by_id,items.page")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    failures = [line for line in slower.stdout.splitlines() if line.startswith("perf-gate: ")]
    assert len(failures) == 1, slower.stdout
    assert failures[0].startswith("perf-gate: items.by_id costs +"), slower.stdout
    assert "over the margin of +25 %" in failures[0]
    # The worktree of BASE is gone again.
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=committed, capture_output=True,
                               text=True, check=True).stdout  # fmt: skip
    assert len(worktrees.splitlines()) == 1, worktrees


def _job(project: Path) -> dict[str, Any]:
    workflow = yaml.safe_load((project / ".github" / "workflows" / "ci.yml").read_text())
    job: dict[str, Any] = workflow["jobs"]["perf-gate"]
    return job


def test_ci_runs_the_gate_on_pull_requests_against_the_base_branch(default_project: Path) -> None:
    job = _job(default_project)
    assert job["if"] == "github.event_name == 'pull_request'"
    checkout, *_ = job["steps"]
    assert checkout["with"]["fetch-depth"] == 0  # the base branch, for its worktree
    runs = [step.get("run", "") for step in job["steps"]]
    assert any("install" in line and "wrk" in line for line in runs)
    assert runs[-1] == "make perf-gate BASE=origin/${{ github.base_ref }}"
    assert job["services"]["postgres"]["image"].startswith("postgres:")


def test_make_perf_gate_needs_a_base_and_hands_on_the_margin(default_project: Path) -> None:
    missing = run(default_project, "make", "-n", "--no-print-directory", "perf-gate")
    assert missing.returncode != 0
    assert "BASE=<git revision> is required" in missing.stderr
    given = run(default_project, "make", "-n", "--no-print-directory", "perf-gate",
                "BASE=origin/main", "MARGIN=7")  # fmt: skip
    assert given.returncode == 0, given.stderr
    assert "-m loadtest.gate --base 'origin/main' --margin 7" in given.stdout
