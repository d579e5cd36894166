"""loadtest/profile/run.py where py-spy may not trace: one line saying what to do, exit 2, no
traceback (the template's own tests profile a real server)."""

import stat
from pathlib import Path

import pytest
from loadtest import project
from loadtest.plan import load
from loadtest.profile import run

REFUSING_PY_SPY = """#!/bin/sh
echo "Error: Permission denied (os error 1)" >&2
exit 1
"""


def test_a_refused_ptrace_ends_with_one_line_naming_the_capability(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    py_spy = tmp_path / "py-spy"
    py_spy.write_text(REFUSING_PY_SPY)
    py_spy.chmod(py_spy.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(run, "_py_spy", lambda: str(py_spy))
    monkeypatch.setenv("DATABASE_URL", "postgresql://127.0.0.1:9/none")
    options = run.Options(None, None, 1.0, tmp_path / "results", None)
    assert run.main(options, load(project.BUDGET)) == 2
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [run.TRACING_REFUSED]
    assert "SYS_PTRACE" in printed[0]
