"""The bundled load tests against a guarded service, for real: on an auth=api_key bake the knee test
starts the service with a key of its own and sends it on every request, wrk and k6 send the key of
LOADTEST_HEADERS, and no file they write holds it; on an auth=jwt bake the knee test's requests
carry tokens of the local issuer, which the service it starts verifies.

Short steps on a shared machine: what is asserted is that every request was let in, never a figure.
"""

import hashlib
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .baking import bake, coarse_search_budget, load_loadtest, run
from .serving import Served, migrated_database, start_service

pytestmark = [pytest.mark.slow, pytest.mark.serial]
KEY = "load-" + secrets.token_urlsafe(24)
HEADERS = {"LOADTEST_HEADERS": f"X-API-Key: {KEY}"}
QUICK = ["--concurrency", "2,8", "--step-seconds", "0.5", "--warmup-seconds", "0.2",
         "--search-seconds", "0.5", "--repeats", "1", "--seed-rows", "300"]  # fmt: skip


def _bake(auth: str, folder: Path, postgres_url: str) -> Iterator[tuple[Path, str]]:
    """A bake of the auth option, and a migrated database of its own."""
    project = bake(folder, auth=auth)
    with migrated_database(project, postgres_url, f"load_{auth}_{secrets.token_hex(4)}") as url:
        yield project, url


@pytest.fixture(scope="module")
def api_key_bake(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str
) -> Iterator[tuple[Path, str]]:
    yield from _bake("api_key", tmp_path_factory.mktemp("api_key"), postgres_url)


@pytest.fixture(scope="module")
def jwt_bake(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str
) -> Iterator[tuple[Path, str]]:
    yield from _bake("jwt", tmp_path_factory.mktemp("jwt"), postgres_url)


def _files(folder: Path) -> dict[str, str]:
    """The run's text results. Not its PNG chart: pixels, where a header value could only be
    drawn, never written as bytes, and where three letters occur in the compressed data by
    chance."""
    return {
        path.name: path.read_text(errors="replace")
        for path in folder.rglob("*")
        if path.is_file() and path.suffix != ".png"
    }


@pytest.mark.parametrize("auth", ["api_key", "jwt"])
def test_the_knee_test_starts_a_guarded_service_that_lets_every_request_in(
    auth: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    project, database_url = request.getfixturevalue(f"{auth}_bake")
    # api_key: the key given is the one the started service accepts; jwt: the run signs its own.
    # The mixed scenario: reads and writes (jwt: both scopes) in one sweep and one search.
    env = {"DATABASE_URL": database_url, **(HEADERS if auth == "api_key" else {})}
    budget = coarse_search_budget(project, tmp_path)
    result = run(
        project, sys.executable, "-m", "loadtest",
        "--budget", str(budget), "--results", str(tmp_path / "results"),
        "run", "--scenarios", "items.mixed", *QUICK, "--no-wrk", timeout=240, **env,
    )  # fmt: skip
    output = result.stdout + result.stderr
    found = list((tmp_path / "results").glob("*.json"))
    assert len(found) == 1, output[-3000:]
    results: dict[str, Any] = json.loads(found[0].read_text())
    assert results["target"]["started_here"] is True
    assert results["client"]["probe"]["errors"] == 0
    assert set(results["scenarios"]) == {"items.mixed"}
    for name, scenario in results["scenarios"].items():
        steps = scenario["steps"]
        assert [step["concurrency"] for step in steps] == [2, 8], name
        assert all(step["requests"] > 0 and step["errors"] == 0 for step in steps), (name, steps)
        # Open loop, a request still unanswered after the trial counts as an error too: at least
        # one trial was answered in full (whether its p99 held the budget is the machine's noise).
        trials = scenario["search"]["trials"] + scenario["search"]["repeats"]
        assert any(trial["errors"] == 0 for trial in trials), (name, trials)
    expected = {"api_key": ["X-API-Key"], "jwt": ["Authorization"]}[auth]
    assert results["client"]["headers"] == expected  # the names alone
    secret = KEY if auth == "api_key" else "eyJ"  # a JWT starts with the encoding of '{"'
    assert secret not in output
    for name, text in _files(tmp_path / "results").items():
        assert secret not in text, name


@pytest.fixture(scope="module")
def served(
    api_key_bake: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """The api_key bake's service, accepting KEY alone."""
    project, database_url = api_key_bake
    log = tmp_path_factory.mktemp("served") / "service.log"
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    service = start_service(project, database_url, log, API_KEY_HASHES=digest)
    try:
        yield service
    finally:
        service.process.terminate()
        service.process.wait(timeout=30)


def _k6(project: Path, url: str, results: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run(
        project, sys.executable, "-m", "loadtest", "--results", str(results),
        "k6", "--url", url, "--scenarios", "items.by_id,items.create", "--seconds", "1",
        "--rate-scale", "0.05",
        timeout=120, **env,
    )  # fmt: skip


def test_k6_sends_the_key_of_loadtest_headers_and_writes_it_nowhere(
    api_key_bake: tuple[Path, str], served: Served, tmp_path: Path
) -> None:
    project = api_key_bake[0]
    result = _k6(project, served.url, tmp_path, **HEADERS)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    summary = json.loads((tmp_path / "k6-summary.json").read_text())
    assert summary["metrics"]["http_reqs"]["count"] > 0
    assert summary["metrics"]["checks"]["fails"] == 0
    assert KEY not in output
    for name, text in _files(tmp_path).items():
        assert KEY not in text, name


def test_k6_without_the_key_stops_at_the_seeding_with_a_message_naming_the_fix(
    api_key_bake: tuple[Path, str], served: Served, tmp_path: Path
) -> None:
    result = _k6(api_key_bake[0], served.url, tmp_path, LOADTEST_HEADERS="")
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    assert "answered 401" in result.stderr
    assert "LOADTEST_HEADERS" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.needs("wrk")
def test_wrk_sends_the_key_on_every_request_of_a_mix_with_bodies(
    api_key_bake: tuple[Path, str], served: Served
) -> None:
    project = api_key_bake[0]
    scenarios, wrk = (load_loadtest(project, name) for name in ("plan.scenarios", "drive.wrk"))
    seeder = load_loadtest(project, "drive.service")
    ids = seeder.seed_over_http(served.url, 50, {"X-API-Key": KEY}, ["items"])["items"]
    lua = wrk.script(scenarios.SCENARIOS["items.mixed"], low=min(ids), high=max(ids))
    figures = wrk.run(served.url, lua, connections=2, seconds=1, headers={"X-API-Key": KEY})
    assert figures["requests"] > 0
    assert figures["errors"] == 0, figures
    refused = wrk.run(served.url, lua, connections=2, seconds=1)
    assert refused["errors"] >= refused["requests"] > 0, refused  # every request a 401
