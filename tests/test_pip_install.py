"""The pip path of a bake (issue 32): on a machine with Python alone, no uv on PATH, the README's
first commands (`make install && make dev`) install the service with pip and serve it, answering
/readyz on the throwaway PostgreSQL of `make dev`.

Two bakes take it: one made where uv is missing too (no lock: pip resolves pyproject.toml's ranges)
into a venv made beforehand with the pip that `python3 -m venv` bundles (23.2.1 with Python 3.11.7,
whose resolver gave up on the OpenTelemetry family's open ranges), and one locked at bake time
(`make install` creates the venv, upgrading its pip, and installs requirements.lock.txt's pins).
Each takes two to twelve minutes here (2 cores, shared), most of it pip unpacking and compiling.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .baking import VENV_BIN, bake, load_dev_module
from .serving import wait_until_answering

# pytest.ini's 1200 s per test can be short for pip installing 150 packages on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

INSTALL_SECONDS = 1800


def _path_without_uv() -> str:
    """PATH without the template's venv (it has uv) and without any other folder holding uv."""
    folders = os.environ["PATH"].split(os.pathsep)
    kept = [f for f in folders if Path(f) != VENV_BIN and not Path(f, "uv").exists()]
    path = os.pathsep.join(kept)
    assert shutil.which("uv", path=path) is None
    assert shutil.which("python3", path=path) is not None
    return path


def _user_env() -> dict[str, str]:
    """A shell of a user who has Python and make, and neither uv nor the template's venv."""
    env = {
        key: value for key, value in os.environ.items() if key not in {"VIRTUAL_ENV", "PYTHONPATH"}
    }
    return {**env, "PATH": _path_without_uv()}


def _user(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command), cwd=project, env=_user_env(), capture_output=True, text=True,
        timeout=INSTALL_SECONDS, check=False,
    )  # fmt: skip


def _name(distribution: str) -> str:
    """A distribution's name as PEP 503 normalises it (uv's export writes names so)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _readme_commands(project: Path) -> list[str]:
    """The commands of the README's first line: what a user types first."""
    block = (project / "README.md").read_text().split("```sh\n", 1)[1]
    first = block.splitlines()[0].partition("#")[0]
    return [command.strip() for command in first.split("&&")]


def _bundled_pip() -> str:
    python3 = shutil.which("python3", path=_path_without_uv())
    assert python3 is not None
    version = subprocess.run(
        [python3, "-c", "import ensurepip; print(ensurepip.version())"],
        capture_output=True, text=True, check=True, env=_user_env(),
    )  # fmt: skip
    return version.stdout.strip()


def _pip_version(project: Path) -> str:
    shown = _user(project, ".venv/bin/python", "-m", "pip", "--version")
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.split()[1]


def _install_and_serve(project: Path) -> None:
    """The README's first commands, in its order: `make install`, then `make dev` answering."""
    assert _readme_commands(project) == ["make install", "make dev"]
    installed = _user(project, "make", "install")
    # pip's warnings (an index folder missing, say) would push its error out of the message.
    errors = "\n".join(line for line in installed.stderr.splitlines() if "WARNING" not in line)
    assert installed.returncode == 0, installed.stdout[-3000:] + errors[-5000:]
    assert "uv sync" not in installed.stdout
    port = load_dev_module(project, "devdb").free_port()
    process = subprocess.Popen(
        ["make", f"PORT={port}", "dev"], cwd=project, env=_user_env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C reaches make, devdb and uvicorn, as from a terminal
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/readyz"
        wait_until_answering(process, url, what="make dev", seconds=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert process.returncode is not None, output[-3000:]


@pytest.fixture
def folder() -> Iterator[Path]:
    # Outside pytest's temporary root, which a concurrent pytest session may reset to 0700: the
    # throwaway PostgreSQL of `make dev` runs as a user of its own, which must reach its data.
    path = Path(tempfile.mkdtemp(prefix="pip-path-bake-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_bake_made_without_uv_installs_with_the_pip_python_bundles_and_serves(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _path_without_uv())
    project = bake(folder, lock_dependencies="yes")  # asked for, but no uv to lock with
    monkeypatch.undo()
    assert not (project / "uv.lock").exists()
    assert not (project / "requirements.lock.txt").exists()
    # The venv as `python3 -m venv` makes it, its pip the one Python bundles: `make install`
    # keeps a venv that exists, so this pip resolves the ranges of pyproject.toml alone.
    made = _user(project, "python3", "-m", "venv", ".venv")
    assert made.returncode == 0, made.stderr
    bundled = _bundled_pip()
    assert _pip_version(project) == bundled
    _install_and_serve(project)
    assert _pip_version(project) == bundled


def test_a_locked_bake_installs_its_pins_with_pip_alone_and_serves(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Baked where uv is (the template's venv has it): uv.lock, and its pins for pip.
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    project = bake(folder, lock_dependencies="yes")
    monkeypatch.undo()
    lock = project / "requirements.lock.txt"
    assert (project / "uv.lock").is_file()
    assert lock.is_file()
    _install_and_serve(project)
    # A new venv's pip is upgraded before it installs anything (--upgrade-deps).
    assert _pip_version(project) != _bundled_pip()
    # Every package installed is one the lock pins, at its version: pip resolved nothing itself.
    pinned = {
        (_name(name), version.split()[0])
        for line in lock.read_text().splitlines()
        if not line.startswith((" ", "#")) and "==" in line
        for name, version in [line.split("==", 1)]
    }
    listed = _user(project, ".venv/bin/python", "-m", "pip", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    slug = tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"]
    installed = {
        (_name(package["name"]), package["version"])
        for package in json.loads(listed.stdout)
        if _name(package["name"]) not in {"pip", "setuptools", _name(slug)}
    }
    assert installed - pinned == set()
    assert len(installed) > 50
