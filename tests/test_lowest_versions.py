"""The lower bounds of a baked pyproject.toml are true: installed at the oldest versions they allow
for each direct dependency (`make install-lowest`, uv's --resolution lowest-direct), the bake
passes its own suite. An auth=jwt bake, whose runtime needs three packages more than the others:
the option set with a short unique field (tests/option_sets.py), whose suite runs here alone.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from .baking import VENV_BIN, run, tool_env
from .option_sets import OPTION_SETS
from .readme_way import bake_readme_way, finish

pytestmark = pytest.mark.slow

# A suite that passes takes about 2 minutes here; a hang fails at this limit instead of lasting.
SUITE_SECONDS = 480


def test_jwt_bake_passes_its_suite_on_the_oldest_versions_its_bounds_allow(
    tmp_path: Path, postgres_url: str, readme_cookiecutter: Path
) -> None:
    assert shutil.which("uv", path=str(VENV_BIN)), "uv belongs to the template's venv"
    # Baked the README's way and finished as `make install` finishes it, as the option sets are.
    options = OPTION_SETS["jwt-short-unique-field"]
    project = bake_readme_way(readme_cookiecutter, tmp_path / "bake", **options)
    finish(project)
    venv = tmp_path / "lowest"
    # Where Python keeps no bytecode (PYTHONDONTWRITEBYTECODE), the Makefile has uv compile what
    # it installs (UV_COMPILE_BYTECODE), else each process of the suite compiles what it imports.
    env = tool_env(project, PYTHONPATH="", PYTHONDONTWRITEBYTECODE="1")
    env.pop("UV_COMPILE_BYTECODE", None)
    installed = subprocess.run(
        ["make", "install-lowest", f"VENV={venv}"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    assert list(venv.glob("lib/python3.*/site-packages/sqlalchemy/__pycache__/*.pyc"))
    versions = run(
        project, str(VENV_BIN / "uv"), "pip", "list", "--python", str(venv / "bin/python")
    )
    # -x: the first failure is the answer, and no later test waits on what already broke.
    suite = (str(venv / "bin/python"), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider")
    result = run(project, *suite, timeout=SUITE_SECONDS, DATABASE_URL=postgres_url, PYTHONPATH="")
    assert result.returncode == 0, (
        f"{result.stdout[-6000:]}{result.stderr[-2000:]}\ninstalled:\n{versions.stdout}"
    )
    assert " passed" in result.stdout
