"""Bake as the README tells a user to: cookiecutter alone in a venv of its own, installed by pip,
and neither uv, ruff, cruft nor the template's venv on PATH; then check a bake the way its own
`make lint` and `make test` do, with the template's venv standing in for the bake's `.venv`."""

import os
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

from .baking import PYTEST, TEMPLATE, VENV_BIN, run

# What the README's way has not, though this machine may: each would do part of the bake's work.
ABSENT = ("uv", "uvx", "ruff", "cruft", "cookiecutter")


def user_path() -> str:
    """PATH without the template's venv and without any folder holding one of ABSENT."""
    folders = os.environ["PATH"].split(os.pathsep)
    kept = [
        folder
        for folder in folders
        if Path(folder) != VENV_BIN and not any(Path(folder, tool).exists() for tool in ABSENT)
    ]
    path = os.pathsep.join(kept)
    assert shutil.which("python3", path=path) is not None
    return path


def user_env(**extra: str) -> dict[str, str]:
    """A shell of a user who has Python and make, and none of ABSENT."""
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    return {**env, "PATH": user_path(), **extra}


def install_cookiecutter(folder: Path) -> Path:
    """The README's first line: a venv with cookiecutter alone, by pip (the release the template's
    venv has, so that a run is repeatable); returns its cookiecutter."""
    python3 = shutil.which("python3", path=user_path())
    assert python3 is not None
    env = user_env()
    subprocess.run([python3, "-m", "venv", str(folder)], check=True, env=env)
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q"]
    installed = subprocess.run(
        [*pip, f"cookiecutter=={version('cookiecutter')}"],
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    return folder / "bin" / "cookiecutter"


def bake_readme_way(
    cookiecutter: Path, output: Path, *, template: Path | str = TEMPLATE, **context: str
) -> Path:
    """`cookiecutter <template> --no-input key=value...` as the user runs it; the project folder."""
    options = [f"{key}={value}" for key, value in {"lock_dependencies": "no", **context}.items()]
    baked = subprocess.run(
        [str(cookiecutter), str(template), "--no-input", "-o", str(output), *options],
        capture_output=True, text=True, env=user_env(), check=False, timeout=300,
    )  # fmt: skip
    assert baked.returncode == 0, f"the bake failed:\n{baked.stdout[-3000:]}{baked.stderr[-3000:]}"
    (project,) = [path for path in output.iterdir() if path.is_dir()]
    return project


def make(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`make ...` of the bake, with the template's venv as its VENV (what `make install` makes)."""
    return run(project, "make", "--no-print-directory", *arguments, f"VENV={VENV_BIN.parent}")


def finish(project: Path) -> None:
    """What `make install` does, once its venv is made, to a bake made without uv, ruff or the
    service's dependencies: lays the code out, locks, writes openapi.json (`make finish-bake`)."""
    finished = make(project, "finish-bake")
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]


def lint_and_test(project: Path, database_url: str, *tests: str) -> None:
    """The bake's `make lint`, then its suite (or `tests`), stopping at the first failure."""
    linted = make(project, "lint")
    assert linted.returncode == 0, f"make lint:\n{linted.stdout[-5000:]}{linted.stderr[-2000:]}"
    suite = run(project, *PYTEST, "-x", *tests, DATABASE_URL=database_url, timeout=1800)
    assert suite.returncode == 0, suite.stdout[-6000:] + suite.stderr[-2000:]
    assert " passed" in suite.stdout, suite.stdout[-2000:]
