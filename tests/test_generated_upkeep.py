"""The generated repository keeps itself current: CI installs from the lock exactly (a stale lock
fails), audits what the lock pins, runs make lint's checks as pre-commit hooks, and says when the
template has moved. Each is run for real on a bake."""

import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from .baking import VENV_BIN, bake, copy_of_template, git, git_copy_of_template, run


@pytest.fixture(scope="module")
def locked_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = bake(tmp_path_factory.mktemp("locked"), lock_dependencies="yes")
    assert (project / "uv.lock").is_file(), "uv did not lock the baked project"
    return project


def _outgrow_the_lock(project: Path) -> None:
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    opening = "\ndependencies = [\n"
    assert opening in text
    pyproject.write_text(text.replace(opening, f'{opening}    "six>=1.16",\n'))


@pytest.fixture
def stale_project(locked_project: Path, tmp_path: Path) -> Path:
    for name in ("pyproject.toml", "uv.lock", "Makefile", "README.md"):
        (tmp_path / name).write_bytes((locked_project / name).read_bytes())
    _outgrow_the_lock(tmp_path)
    return tmp_path


def test_ci_install_syncs_from_the_lock_and_refuses_a_stale_one(
    locked_project: Path, stale_project: Path
) -> None:
    planned = run(locked_project, "make", "-n", "install", "UV_SYNC_FLAGS=--locked")
    (sync,) = [line for line in planned.stdout.splitlines() if "uv sync" in line]
    command = sync[sync.index("uv sync") :].split(";")[0].split()
    assert command[:3] == ["uv", "sync", "--locked"]
    # The very command, without installing: the lock matches, then pyproject.toml outgrows it.
    assert run(locked_project, *command, "--dry-run").returncode == 0
    stale = run(stale_project, *command, "--dry-run")
    assert stale.returncode != 0
    assert "uv lock" in stale.stderr


def test_make_audit_hands_pip_audit_exactly_what_the_lock_pins(
    locked_project: Path, stale_project: Path
) -> None:
    """pip-audit's dry run: it reads every pinned package; tests/test_audit.py runs the audit."""
    dry_run = f"PIP_AUDIT={VENV_BIN / 'pip-audit'} --dry-run"
    audited = run(locked_project, "make", "audit", dry_run, timeout=120)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    locked = [
        package
        for package in _lock(locked_project)["package"]
        if package.get("source", {}).get("registry")
    ]
    (audited_count,) = re.findall(r"would have audited (\d+) packages", audited.stderr)
    # Every locked package but those whose markers exclude this platform (e.g. Windows-only ones).
    assert len(locked) - 5 <= int(audited_count) <= len(locked)
    assert run(stale_project, "make", "audit", dry_run).returncode != 0


def _lock(project: Path) -> dict[str, Any]:
    return tomllib.loads((project / "uv.lock").read_text())


def test_pre_commit_hooks_are_make_lints_checks_and_fail_on_a_lint_error(tmp_path: Path) -> None:
    project = bake(tmp_path)
    hooks = {
        hook["id"]: hook
        for hook in yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"][0][
            "hooks"
        ]
    }
    # --no-print-directory: under an outer make (`make test`) make announces the directory.
    lint = (
        run(project, "make", "--no-print-directory", "-n", "lint", "BIN=.venv/bin")
        .stdout.strip()
        .split(" && ")
    )
    checks = (("ruff-check", " ."), ("ruff-format", " ."), ("mypy", ""), ("lint-migrations", ""))
    entries = [hooks[name]["entry"].replace(" --force-exclude", "") + end for name, end in checks]
    assert entries == lint
    # The project's .venv, as `make install` makes it: here the template's, with the same tools.
    # (the whole venv: its python finds its packages through the pyvenv.cfg beside bin/)
    (project / ".venv").symlink_to(VENV_BIN.parent)
    git(project, "init", "-q")
    git(project, "add", "-A")

    def pre_commit() -> subprocess.CompletedProcess[str]:
        return run(
            project, str(VENV_BIN / "pre-commit"), "run", "--all-files", "--color", "never",
            PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), timeout=300,
        )  # fmt: skip

    passed = pre_commit()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert {
        line.split(".")[0] for line in passed.stdout.splitlines() if line.endswith("Passed")
    } >= {
        "ruff check",
        "ruff format --check",
        "mypy --strict",
        "chart README up to date",
        "squawk on the revisions' SQL",
    }
    app = next((project / "src").glob("*/serving/app.py"))
    app.write_text("import os\n" + app.read_text())  # an unused import
    failed = pre_commit()
    assert failed.returncode == 1
    assert "ruff check" in failed.stdout
    assert "F401" in failed.stdout


def _cruft_step(project: Path) -> str:
    workflow = yaml.safe_load((project / ".github" / "workflows" / "ci.yml").read_text())
    (step,) = [
        step for step in workflow["jobs"]["template"]["steps"] if step.get("name") == "cruft check"
    ]
    script: str = step["run"]
    return script


def test_ci_says_when_the_template_has_moved_and_stays_quiet_otherwise(tmp_path: Path) -> None:
    template = git_copy_of_template(tmp_path / "template")
    created = run(
        tmp_path, "cruft", "create", str(template), "--no-input",
        "--output-dir", str(tmp_path / "out"),
        "--extra-context", json.dumps({"lock_dependencies": "no"}),
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    project = tmp_path / "out" / "inventory-service"
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "baked")
    step = ["bash", "-e", "-c", _cruft_step(project)]
    current = run(project, *step, timeout=300)
    assert current.returncode == 0, current.stdout + current.stderr
    assert "::warning" not in current.stdout, current.stdout + current.stderr

    readme = template / "{{cookiecutter.project_slug}}" / "README.md"
    readme.write_text(readme.read_text() + "\nA line the template added later.\n")
    git(template, "commit", "-qam", "template v2")
    moved = run(project, *step, timeout=300)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "::warning title=Template moved::" in moved.stdout

    # A bake from a folder that is not a git checkout records no template to compare with.
    plain = bake(tmp_path / "plain", template=copy_of_template(tmp_path / "unversioned"))
    assert not (plain / ".cruft.json").exists()
    assert "nothing to compare" in run(plain, *step).stdout
    assert shlex.split(_cruft_step(plain))  # a shell script, the same in every bake
