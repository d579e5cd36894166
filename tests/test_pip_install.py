"""The pip path of a bake: on a machine with Python alone, no uv on PATH, the README's first
commands (`make install && make dev`) install the service with pip and serve it, answering
/readyz on the throwaway PostgreSQL of `make dev`.

The bake is made the README's way (cookiecutter alone in its venv: no uv, no ruff, not the
service's dependencies, so no lock, no openapi.json and the code in the template's layout), into
a venv made beforehand with the pip that `python3 -m venv` bundles (23.2.1 with Python 3.11.7,
whose resolver gave up on the OpenTelemetry family's open ranges). Its `make install` is the
whole of what the bake lacks: the ranges installed, uv among them, which locks; the lock's pins
installed, hash-checked; the code laid out; openapi.json written. Then every target a user runs
works: `make dev`, `make lint`, `make test`, `make lock`, `make client`. It takes three to
twelve minutes here (2 cores, shared), most of it pip unpacking and compiling.
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

from .baking import GIT, load_dev_module
from .readme_way import bake_readme_way, user_env, user_path
from .serving import wait_until_answering

# pytest.ini's 1200 s per test can be short for pip installing 150 packages on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

INSTALL_SECONDS = 1800


def _user(project: Path, *command: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command), cwd=project, env=user_env(**env), capture_output=True, text=True,
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
    python3 = shutil.which("python3", path=user_path())
    assert python3 is not None
    version = subprocess.run(
        [python3, "-c", "import ensurepip; print(ensurepip.version())"],
        capture_output=True, text=True, check=True, env=user_env(),
    )  # fmt: skip
    return version.stdout.strip()


def _pip_version(project: Path) -> str:
    shown = _user(project, ".venv/bin/python", "-m", "pip", "--version")
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.split()[1]


def _install_and_serve(project: Path) -> str:
    """The README's first commands, in its order: `make install`, then `make dev` answering;
    what `make install` printed."""
    assert _readme_commands(project) == ["make install", "make dev"]
    installed = _user(project, "make", "install")
    # pip's warnings (an index folder missing, say) would push its error out of the message.
    errors = "\n".join(line for line in installed.stderr.splitlines() if "WARNING" not in line)
    assert installed.returncode == 0, installed.stdout[-3000:] + errors[-5000:]
    assert "uv sync" not in installed.stdout
    port = load_dev_module(project, "devdb").free_port()
    process = subprocess.Popen(
        ["make", f"PORT={port}", "dev"], cwd=project, env=user_env(),
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
    return installed.stdout


@pytest.fixture
def folder() -> Iterator[Path]:
    # Outside pytest's temporary root, which a concurrent pytest session may reset to 0700: the
    # throwaway PostgreSQL of `make dev` runs as a user of its own, which must reach its data.
    path = Path(tempfile.mkdtemp(prefix="pip-path-bake-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_bake_made_the_readmes_way_is_complete_after_make_install_and_every_target_works(
    folder: Path, readme_cookiecutter: Path, postgres_url: str
) -> None:
    # lock_dependencies=yes asked for, but no uv to lock with at bake time.
    project = bake_readme_way(readme_cookiecutter, folder, lock_dependencies="yes")
    assert not {"uv.lock", "requirements.lock.txt", "openapi.json"} & set(os.listdir(project))
    assert (project / ".layout-pending").is_file()
    assert _user(project, "git", "init", "-q").returncode == 0
    # The venv as `python3 -m venv` makes it, its pip the one Python bundles: `make install`
    # keeps a venv that exists, so this pip resolves the ranges of pyproject.toml alone.
    made = _user(project, "python3", "-m", "venv", ".venv")
    assert made.returncode == 0, made.stderr
    bundled = _bundled_pip()
    assert _pip_version(project) == bundled
    installed = _install_and_serve(project)
    assert _pip_version(project) == bundled
    # What the bake lacked, written by `make install` with the venv's own uv and said.
    assert {"uv.lock", "requirements.lock.txt", "openapi.json"} <= set(os.listdir(project))
    assert not (project / ".layout-pending").exists()
    assert "Wrote uv.lock requirements.lock.txt openapi.json" in installed
    # Committed as the line says; then every target of the README runs with no step between.
    assert _user(project, "git", "add", "-A").returncode == 0
    committed = _user(project, *GIT, "commit", "-qm", "Baked")
    assert committed.returncode == 0, committed.stderr
    # `make test` here is also the default option set's suite (tests/test_generated_suites.py).
    for target in ("lint", "test", "lock"):
        done = _user(project, "make", target, DATABASE_URL=postgres_url)
        assert done.returncode == 0, f"make {target}:\n{done.stdout[-4000:]}{done.stderr[-3000:]}"
    assert _user(project, "git", "status", "--porcelain").stdout == ""  # the lock was current
    client = _user(project, "make", "client")  # the TypeScript SDK too, where npm is
    assert client.returncode == 0, client.stdout[-3000:] + client.stderr[-3000:]
    assert (project / "clients" / "python" / "pyproject.toml").is_file()
    # Every package installed is one the lock pins, at its version: pip resolved nothing itself
    # in the end (`make install` installed the pins of the lock it wrote).
    lock = project / "requirements.lock.txt"
    pinned = {
        (_name(name), version.split()[0])
        for line in lock.read_text().splitlines()
        if not line.startswith((" ", "#")) and "==" in line
        for name, version in [line.split("==", 1)]
    }
    listed = _user(project, ".venv/bin/python", "-m", "pip", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    slug = tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"]
    packages = {
        (_name(package["name"]), package["version"])
        for package in json.loads(listed.stdout)
        if _name(package["name"]) not in {"pip", "setuptools", _name(slug)}
    }
    assert packages - pinned == set()
    assert len(packages) > 50
