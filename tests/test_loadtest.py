"""The bundled load tests, run for real: the knee test and k6 against a baked service on
PostgreSQL, and the engine calibrated against apps whose throughput Little's law predicts.

Short steps on a shared machine: these tests assert what must hold whatever the machine's speed
(consistency, verdicts, budget lines, laws), never a figure measured on one machine.
"""

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from .baking import bake, run, tool_env

pytestmark = pytest.mark.slow
PACKAGE = "inventory_service"
QUICK = ["--concurrency", "2,8,32", "--step-seconds", "1.5", "--warmup-seconds", "0.5",
         "--open-loop-seconds", "2", "--seed-rows", "2000"]  # fmt: skip
LITTLE_APP = '''
import asyncio
import time

from fastapi import FastAPI

app = FastAPI()


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/sleep")
async def sleep() -> dict[str, str]:
    await asyncio.sleep(0.05)
    return {}


@app.get("/block")
def block() -> dict[str, str]:
    time.sleep(0.05)  # a sync handler: runs in anyio's thread pool of 40 threads
    return {}
'''


async def _execute(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _pinned(command: list[str]) -> list[str]:
    return ["taskset", "-c", "0", *command] if (os.cpu_count() or 1) >= 2 else command


def _serve(command: list[str], cwd: Path, env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(_pinned(command), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"{command} did not start") from None
            time.sleep(0.05)  # polling a process that is starting: there is no event to wait on


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("loadtest"))


@pytest.fixture(scope="module")
def database_url(project: Path, postgres_url: str) -> Iterator[str]:
    name = f"loadtest_{secrets.token_hex(4)}"
    asyncio.run(_execute(postgres_url, f'CREATE DATABASE "{name}"'))
    url = urlunsplit(urlsplit(postgres_url)._replace(path=f"/{name}"))
    migrated = run(project, sys.executable, "-m", "alembic", "upgrade", "head", DATABASE_URL=url)
    assert migrated.returncode == 0, migrated.stderr
    yield url
    asyncio.run(_execute(postgres_url, f'DROP DATABASE "{name}" WITH (FORCE)'))


@pytest.fixture(scope="module")
def knee_run(project: Path, database_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One short `python -m loadtest` on two scenarios, `create` held to an impossible budget."""
    folder = tmp_path_factory.mktemp("knee")
    budget = (project / "loadtest" / "budget.toml").read_text()
    budget = budget.replace("[scenarios.create]     # POST /<resources> with a small valid body\nmin_rps = 400",
                            "[scenarios.create]\nmin_rps = 1000000")  # fmt: skip
    assert "min_rps = 1000000" in budget
    (folder / "budget.toml").write_text(budget)
    result = run(
        project, sys.executable, "-m", "loadtest",
        "--budget", str(folder / "budget.toml"), "--results", str(folder / "results"),
        "--helm-values", str(folder / "values-capacity.yaml"),
        "run", "--scenarios", "by_id,create", *QUICK, "--write-helm-values",
        timeout=180, DATABASE_URL=database_url,
    )  # fmt: skip
    found = list((folder / "results").glob("*.json"))
    assert len(found) == 1, result.stdout[-3000:] + result.stderr[-3000:]
    (results_path,) = found
    return {"process": result, "results": json.loads(results_path.read_text()), "folder": folder}


def test_knee_test_sweeps_each_scenario_without_a_failed_request(knee_run: dict[str, Any]) -> None:
    results = knee_run["results"]
    assert set(results["scenarios"]) == {"by_id", "create"}
    assert results["target"]["started_here"] is True
    for scenario in results["scenarios"].values():
        assert [step["concurrency"] for step in scenario["steps"]] == [2, 8, 32]
        assert all(step["rps"] > 0 and step["errors"] == 0 for step in scenario["steps"])
        assert all(step["p50_ms"] <= step["p99_ms"] <= step["max_ms"] for step in scenario["steps"])


def test_knee_test_proves_the_client_was_not_the_ceiling(knee_run: dict[str, Any]) -> None:
    results = knee_run["results"]
    assert results["client"]["processes"] >= 2
    for scenario in results["scenarios"].values():
        assert scenario["verdict"] in {"knee", "not-reached"}
        knee = scenario["steps"][scenario["knee_index"]]
        assert knee["rps"] < results["client"]["capacity_rps"]
        assert knee["server_cpu"] is not None


def test_open_loop_step_runs_at_the_serving_fraction_of_the_knee(knee_run: dict[str, Any]) -> None:
    for scenario in knee_run["results"]["scenarios"].values():
        knee = scenario["steps"][scenario["knee_index"]]
        serving = scenario["serving"]
        assert serving["rate"] == pytest.approx(0.7 * knee["rps"], rel=0.01)
        # Open loop: the schedule is kept whatever the latency, so the requests sent match it.
        assert serving["requests"] == pytest.approx(serving["rate"] * serving["seconds"], rel=0.05)


def test_knee_test_exits_non_zero_with_a_line_per_missed_budget_item(knee_run: dict[str, Any]) -> None:
    process, results = knee_run["process"], knee_run["results"]
    assert process.returncode == 1, process.stdout[-3000:] + process.stderr[-3000:]
    assert any(miss.startswith("MISS create: knee at ") for miss in results["misses"])
    assert "< budget 1,000,000 RPS" in process.stdout
    for miss in results["misses"]:
        assert miss in process.stdout


def test_knee_test_writes_report_chart_and_helm_values(knee_run: dict[str, Any]) -> None:
    folder: Path = knee_run["folder"]
    (report,) = (folder / "results").glob("*.md")
    assert "**Budget: MISSED.**" in report.read_text()
    assert next((folder / "results").glob("*.png")).read_bytes().startswith(b"\x89PNG")
    capacity = knee_run["results"]["capacity"]
    values = (folder / "values-capacity.yaml").read_text()
    assert f"  limitConcurrency: {capacity['limit_concurrency']}\n" in values
    assert f"  targetRPSPerPod: {capacity['target_rps_per_pod']}\n" in values
    assert capacity["limit_concurrency"] > capacity["knee_concurrency"]


def test_knee_test_agrees_with_wrk_run_back_to_back(knee_run: dict[str, Any]) -> None:
    check = knee_run["results"]["wrk_check"]
    assert check["wrk_errors"] == 0
    # The docs hold a full-length run to 15 %. Two-second runs on a shared machine swing more, so
    # wrk's median must fall within 30 % of the range of the engine's runs around it.
    low, high = min(check["engine_runs_rps"]), max(check["engine_runs_rps"])
    assert 0.7 * low <= check["wrk_rps"] <= 1.3 * high, check
    assert len(check["engine_runs_rps"]) == 3


@pytest.fixture(scope="module")
def served(project: Path, database_url: str, knee_run: dict[str, Any]) -> Iterator[str]:
    port = _free_port()
    env = tool_env(project, DATABASE_URL=database_url, PORT=str(port), LOG_LEVEL="warning")
    process = _serve([sys.executable, "-m", PACKAGE], project, env, port)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


def _k6(project: Path, url: str, budget: Path, results: Path) -> subprocess.CompletedProcess[str]:
    return run(
        project, sys.executable, "-m", "loadtest", "--budget", str(budget), "--results", str(results),
        "k6", "--url", url, "--scenarios", "by_id,create", "--seconds", "2", "--rate-scale", "0.2",
        timeout=120,
    )  # fmt: skip


def test_k6_passes_with_thresholds_generated_from_the_budget(project: Path, served: str, tmp_path: Path) -> None:
    result = _k6(project, served, project / "loadtest" / "budget.toml", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    config = json.loads((tmp_path / "k6-config.json").read_text())
    thresholds = config["options"]["thresholds"]
    assert thresholds["http_req_duration{scenario:by_id}"] == ["p(99)<50"]
    assert thresholds["http_req_failed{scenario:create}"] == ["rate<=0"]
    rates = {name: item["stages"][-1]["target"] for name, item in config["options"]["scenarios"].items()}
    assert rates == {"by_id": round(1000 * 0.7 * 0.2), "create": round(400 * 0.7 * 0.2)}
    summary = json.loads((tmp_path / "k6-summary.json").read_text())
    assert summary["metrics"]["http_reqs"]["count"] > 0


def test_k6_fails_when_the_budget_is_missed(project: Path, served: str, tmp_path: Path) -> None:
    budget = (project / "loadtest" / "budget.toml").read_text().replace("max_p99_ms = 50.0", "max_p99_ms = 0.01")
    (tmp_path / "budget.toml").write_text(budget)
    result = _k6(project, served, tmp_path / "budget.toml", tmp_path)
    assert result.returncode == 99, result.stdout[-3000:] + result.stderr[-3000:]
    assert "✗ 'p(99)<0.01'" in result.stdout
    assert "http_req_duration{scenario:by_id}" in result.stderr
    assert "have been crossed" in result.stderr


@pytest.fixture(scope="module")
def little_app(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("little")
    (folder / "little.py").write_text(LITTLE_APP)
    port = _free_port()
    command = [sys.executable, "-m", "uvicorn", "little:app", "--app-dir", str(folder), "--port", str(port),
               "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"]  # fmt: skip
    process = _serve(command, folder, tool_env(project), port)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


def _probe(project: Path, url: str, path: str) -> dict[str, Any]:
    result = run(
        project, sys.executable, "-m", "loadtest", "probe", "--url", url, "--path", path,
        "--concurrency", "64", "--seconds", "3", timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    step: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return step


def test_engine_measures_littles_law_on_an_async_sleep(project: Path, little_app: str) -> None:
    step = _probe(project, little_app, "/sleep")
    # 64 in flight, 50 ms each: at most 64 / 0.05 s = 1,280 RPS; the engine must come close.
    assert step["errors"] == 0
    assert step["p50_ms"] >= 50
    assert 0.85 * 1280 <= step["rps"] <= 1.01 * 1280, step
    # Little's law holds within the measurement: concurrency = throughput x latency.
    assert step["rps"] * step["p50_ms"] / 1000 == pytest.approx(64, rel=0.15)


def test_engine_sees_the_40_thread_ceiling_of_a_blocking_handler(project: Path, little_app: str) -> None:
    step = _probe(project, little_app, "/block")
    # 40 threads, 50 ms each: at most 800 RPS however many requests wait; far more than one thread.
    assert step["errors"] == 0
    assert 0.5 * 800 < step["rps"] < 800, step
