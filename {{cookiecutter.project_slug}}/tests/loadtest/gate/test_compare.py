"""The gate's first check: BASE must be a commit of this project's git repository."""

import subprocess
from pathlib import Path

import pytest
from loadtest import project
from loadtest.gate import compare


def test_the_gate_outside_a_git_repository_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(project, "ROOT", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert compare.main(["--base", "origin/main"]) == 2
    out = capsys.readouterr()
    assert out.out.strip().splitlines() == [
        f"perf-gate: {tmp_path} is not a git repository; BASE must be a revision of it"
        " (git init && git add -A && git commit -m 'first', then BASE=HEAD or a branch)"
    ]
    assert "Traceback" not in out.err


def test_the_gate_with_a_base_the_repository_lacks_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setattr(project, "ROOT", tmp_path)
    assert compare.main(["--base", "origin/main"]) == 2
    assert capsys.readouterr().out.strip() == (
        "perf-gate: no commit 'origin/main' in this repository (git fetch it, or name another)"
    )
