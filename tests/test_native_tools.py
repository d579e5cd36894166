"""The suite on a machine without its native tools: a test that drives one declares it
(`@pytest.mark.needs`, tests/needs.py) and skips without it, naming the tool and its install
command; the run ends with one line of what was skipped for want of which tool; a test that runs a
tool it did not declare fails. PATH without a tool is how a machine without it is made here."""

import os
import subprocess
import sys
from pathlib import Path

from . import native_tools
from .baking import TEMPLATE

CONFTEST = """
from tests.needs import NeedsPlugin

def pytest_configure(config):
    config.pluginmanager.register(NeedsPlugin(), "needs")
"""
TESTS = """
import subprocess
import sys

import pytest

@pytest.mark.needs("wrk")
def test_declared():
    subprocess.run(["wrk", "--version"], check=True)

def test_undeclared():
    subprocess.run(["wrk", "--version"], check=True)

def test_undeclared_in_a_child_process():
    subprocess.run([sys.executable, "-c", "import subprocess; subprocess.run(['wrk'])"], check=True)

def test_no_tool():
    pass
"""


def _pytest(folder: Path, path: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest in `folder` with PATH `path` (the suite's, or one whose conftest registers the
    plugin as the suite's does)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-ra", "--strict-markers",
         *args],
        cwd=folder, env={**os.environ, "PATH": path, "PYTHONPATH": str(TEMPLATE), **env},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _pytest_alone(folder: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The same, without the installed plugins (some seconds each on a shared machine)."""
    return _pytest(folder, path, *args, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")


def _project(folder: Path) -> Path:
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_tools.py").write_text(TESTS)
    return folder


def test_a_test_needing_a_missing_tool_skips_naming_it_and_the_run_ends_saying_so(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path / "project")
    hidden = native_tools.path_without(["wrk"], tmp_path / "path")
    result = _pytest_alone(project, hidden, "-k", "declared and not undeclared or no_tool")
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in lines[-1]
    assert lines[-2] == (
        "skipped for want of native tools: wrk (1 test); as root: apt-get install wrk "
        "(make test does)"
    )
    assert any(
        line.startswith("SKIPPED [1] test_tools.py:")
        and line.endswith("needs wrk on PATH (as root: apt-get install wrk; make test does)")
        for line in lines
    ), result.stdout


def test_a_test_that_runs_a_tool_it_did_not_declare_fails_naming_it(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    # A stand-in wrk: what is checked is that it was run, not what it does.
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "wrk").write_text("#!/bin/sh\nexit 0\n")
    (tools / "wrk").chmod(0o755)
    result = _pytest_alone(project, f"{tools}{os.pathsep}{os.environ['PATH']}")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "4 passed, 2 errors" in result.stdout.splitlines()[-1], result.stdout
    for name in ("test_undeclared", "test_undeclared_in_a_child_process"):
        assert (
            f"test_tools.py::{name} ran 'wrk' without declaring it: "
            "mark it @pytest.mark.needs('wrk')" in result.stdout
        ), result.stdout
    assert "ERROR test_tools.py::test_declared" not in result.stdout
    assert "ERROR test_tools.py::test_no_tool" not in result.stdout


def test_every_tool_is_needed_by_a_test_of_the_suite_and_each_skips_cleanly_without_it(
    tmp_path: Path,
) -> None:
    """The suite's marked tests with every native tool hidden: each skips before its fixtures
    run (so this costs a collection), and every tool of tests/native_tools.py is named."""
    hidden = native_tools.path_without(native_tools.TOOLS, tmp_path / "path")
    result = _pytest(TEMPLATE, hidden, "tests", "-m", "needs")
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " skipped" in lines[-1]
    assert "passed" not in lines[-1]
    assert "error" not in lines[-1]
    summary = lines[-2]
    assert summary.startswith("skipped for want of native tools: "), result.stdout[-3000:]
    for name in native_tools.TOOLS:
        assert f" {name} (" in summary, (name, summary)
