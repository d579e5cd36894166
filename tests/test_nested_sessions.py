"""tests/conftest.py: the pytest sessions this run starts (each bake's suite) leave this run's
temporary root as they find it, where the bakes' PostgreSQL must stay reachable."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest


def test_a_session_this_run_starts_leaves_this_runs_temporary_root_traversable(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    root = tmp_path_factory.getbasetemp()
    while not root.name.startswith("pytest-of-"):
        root = root.parent
    root.chmod(root.stat().st_mode | stat.S_IXOTH)  # as devdb makes it for its server's user
    (tmp_path / "test_one.py").write_text("def test_one(tmp_path):\n    assert tmp_path\n")
    nested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert nested.returncode == 0, nested.stdout + nested.stderr
    assert root.stat().st_mode & stat.S_IXOTH, f"{root} was set back to 0700"
