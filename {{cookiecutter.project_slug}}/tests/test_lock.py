"""requirements.lock.txt is uv.lock's pins for pip (`make lock`), kept in step with it: a `uv lock`
without `make pip-lock` after it (a Dependabot PR, say) fails here."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import PROJECT_ROOT

PIP_LOCK = PROJECT_ROOT / "requirements.lock.txt"


def _pins(export: Path) -> list[str]:
    """An export's lines but its header, which names the file it was written to."""
    return [line for line in export.read_text().splitlines() if not line.startswith("#")]


def test_requirements_lock_pins_exactly_what_uv_lock_pins(tmp_path: Path) -> None:
    if not (PROJECT_ROOT / "uv.lock").is_file():
        assert not PIP_LOCK.exists(), "requirements.lock.txt without uv.lock: `make lock`"
        pytest.skip("no uv.lock: the project is not locked (`make lock` locks it)")
    beside = Path(sys.executable).parent / "uv"  # the venv's own, as the Makefile prefers it
    uv = str(beside) if beside.is_file() else shutil.which("uv")
    if uv is None:
        pytest.skip("uv is neither in the venv nor on PATH: uv.lock cannot be exported to compare")
    assert PIP_LOCK.is_file(), "uv.lock without requirements.lock.txt: run `make pip-lock`"
    exported = tmp_path / PIP_LOCK.name
    command = [
        "make", "--no-print-directory", "--silent", "pip-lock", f"PIP_LOCK={exported}", f"UV={uv}"
    ]  # fmt: skip
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert _pins(PIP_LOCK) == _pins(exported), "requirements.lock.txt is stale: `make pip-lock`"
