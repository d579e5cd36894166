"""The jobs option: `jobs=postgres` bakes the queue, the worker and their tests; `jobs=none` bakes
none of it. A jobs bake's `make install`, `make lint` and whole suite (its worker's tests on a real
PostgreSQL with real worker processes among them) run with the option sets'
(tests/option_sets.py)."""

import json
import sys
from pathlib import Path

import pytest

from .baking import bake, run


def test_a_jobs_bake_has_the_worker_the_queue_migration_and_pgqueuer(jobs_project: Path) -> None:
    package = jobs_project / "src" / "inventory_service"
    assert (package / "worker" / "run.py").is_file()
    assert (package / "kit" / "events.py").is_file()
    assert (jobs_project / "migrations" / "machinery" / "0002_job_queue.py").is_file()
    assert '"pgqueuer[asyncpg]' in (jobs_project / "pyproject.toml").read_text()
    routes = (package / "items" / "routes.py").read_text()
    assert 'enqueue_event(connection, settings, "item.created"' in routes


def test_the_job_queues_revision_passes_squawk_with_pgqueuers_own_serial_ids(
    jobs_project: Path,
) -> None:
    """pgqueuer's tables keep the bigserial ids it ships: the revision says so to squawk itself,
    which holds every other rule on it (`make lint` runs the same command)."""
    done = run(jobs_project, sys.executable, "-m", "scaffold", "lint-migrations")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "4 revisions pass squawk" in done.stdout


def test_a_bake_without_jobs_has_no_worker_no_queue_and_no_pgqueuer(tmp_path: Path) -> None:
    project = bake(tmp_path, lock_dependencies="no")
    package = project / "src" / "inventory_service"
    assert not (package / "worker").exists()
    assert not (package / "kit" / "events.py").exists()
    assert not (project / "tests" / "worker").exists()
    assert not (project / "loadtest" / "jobs").exists()
    assert "bench-jobs" not in (project / "Makefile").read_text()
    machinery = sorted(path.name for path in (project / "migrations" / "machinery").glob("*.py"))
    assert machinery == ["0000_idempotency_keys.py", "0001_cursor_keys.py"]
    assert "pgqueuer" not in (project / "pyproject.toml").read_text()
    assert "worker" not in (package / "__main__.py").read_text()
    assert "enqueue_event" not in (package / "items" / "routes.py").read_text()


@pytest.mark.serial
def test_make_bench_jobs_prints_the_route_cost_with_and_without_its_job_and_jobs_per_second(
    jobs_project: Path,
) -> None:
    """docs/jobs.md's command, on a small run: every figure it prints comes from the run."""
    if not (jobs_project / ".venv").is_dir():
        assert run(jobs_project, "make", "install", PYTHONPATH="").returncode == 0
    # Enough requests that each figure spans several ticks of the 10 ms clock the kernel reports
    # a process's CPU in: at 200, the client's CPU was one tick or none (a 0 µs figure).
    result = run(jobs_project, "make", "bench-jobs", "REQUESTS=1000", PYTHONPATH="", timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert any(line.startswith("load average before") for line in lines)
    (without,) = [line.split() for line in lines if line.strip().startswith("without its job")]
    (with_job,) = [line.split() for line in lines if line.strip().startswith("with its job")]
    assert all(float(figure) > 0 for figure in without[3:] + with_job[3:])
    (drained,) = [line for line in lines if "jobs/s" in line]
    assert float(drained.split()[0].replace(",", "")) > 0
    assert "1000 requests over 8 connections" in result.stdout
    guide = (jobs_project / "docs" / "jobs.md").read_text()
    assert "make bench-jobs" in guide


@pytest.mark.serial
def test_make_bench_jobs_in_pod_measures_the_creates_with_the_worker_beside_the_server_and_apart(
    jobs_project: Path,
) -> None:
    """docs/jobs.md's in-pod measurement, on a small run: at the rate, the creates with no worker
    and with one pinned to the server's core, delivering while it runs."""
    if not (jobs_project / ".venv").is_dir():
        assert run(jobs_project, "make", "install", PYTHONPATH="").returncode == 0
    result = run(
        jobs_project,
        "make",
        "bench-jobs-in-pod",
        "FRACTIONS=0.2",
        "ROUNDS=1",
        "SECONDS=2",
        PYTHONPATH="",
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((jobs_project / "loadtest" / "results" / "jobs-in-pod.json").read_text())
    trials = {trial["place"]: trial for trial in document["trials"]}
    assert set(trials) == {"none", "API's core"}
    assert trials["none"]["worker_cores"] is None
    assert trials["none"]["delivered_per_s"] == 0
    assert trials["API's core"]["worker_cores"] == [0]
    assert trials["API's core"]["worker_cpu"] > 0
    assert trials["API's core"]["delivered_per_s"] > 0
    for trial in trials.values():
        assert trial["rps"] > 0
        assert trial["errors"] == 0
        assert trial["client_cpu"] > 0
        assert trial["p99_ms"] >= trial["p50_ms"] > 0
    (ratio,) = [line for line in result.stdout.splitlines() if "on the API's core is" in line]
    assert float(ratio.split(" is ")[1].split("x")[0]) > 0
    assert "make bench-jobs-in-pod" in (jobs_project / "docs" / "jobs.md").read_text()


def test_a_new_resource_of_a_jobs_bake_enqueues_its_events(jobs_project: Path) -> None:
    """`make resource` generates the same events for each new resource when the option is on."""
    result = run(
        jobs_project,
        "python",
        "-m",
        "scaffold",
        "add",
        "order",
        "--fields",
        "total_cents:money",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    routes = (jobs_project / "src" / "inventory_service" / "orders" / "routes.py").read_text()
    for event in ("created", "updated", "deleted"):
        assert f'enqueue_event(connection, settings, "order.{event}"' in routes
