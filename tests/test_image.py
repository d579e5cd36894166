"""The baked image as written: hadolint, the Dockerfile's shape, compose, and the image's command
run outside a container with the Dockerfile's environment on a real PostgreSQL
(tests/test_image_build.py builds and runs the image itself)."""

import json
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
import yaml

from .baking import VENV_BIN, bake, load_dev_module, run, tool_env
from .serving import scratch_database, wait_until_answering


def _dockerfile_runtime(project: Path) -> tuple[dict[str, str], list[str], str]:
    """ENV, CMD and STOPSIGNAL of the Dockerfile's last stage (the image that ships)."""
    text = (project / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    last_from = max(index for index, line in enumerate(lines) if line.upper().startswith("FROM "))
    env: dict[str, str] = {}
    command: list[str] = []
    stop_signal = ""
    for line in lines[last_from:]:
        instruction, _, rest = line.partition(" ")
        if instruction == "ENV":
            for pair in shlex.split(rest):
                name, _, value = pair.partition("=")
                env[name] = value
        elif instruction == "CMD":
            command = json.loads(rest)
        elif instruction == "STOPSIGNAL":
            stop_signal = rest.strip()
    return env, command, stop_signal


def test_dockerfile_passes_hadolint(default_project: Path) -> None:
    result = subprocess.run(
        [str(VENV_BIN / "hadolint"), "--no-color", "Dockerfile"],
        cwd=default_project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_flags_a_root_single_stage_image(tmp_path: Path) -> None:
    """The check above can fail: hadolint reports an unpinned base image and a root user."""
    (tmp_path / "Dockerfile").write_text("FROM python\nUSER root\nRUN pip install fastapi\n")
    result = subprocess.run(
        [str(VENV_BIN / "hadolint"), "--no-color", "Dockerfile"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "DL3006" in result.stdout
    assert "DL3002" in result.stdout


def test_image_is_multi_stage_non_root_and_runs_the_package(default_project: Path) -> None:
    dockerfile = (default_project / "Dockerfile").read_text()
    stages = [line for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert len(stages) >= 3
    assert "slim" in stages[-1]
    runtime = dockerfile.split(stages[-1], 1)[1]
    assert "--from=uv" not in runtime  # no build tool shipped
    assert "uv sync" not in runtime
    assert "COPY --from=build /app/.venv /app/.venv" in runtime
    assert "\nUSER 10001:10001\n" in runtime
    assert not {"gcc", "build-essential", "apt-get"} & set(dockerfile.split())
    _, command, stop_signal = _dockerfile_runtime(default_project)
    assert command == ["python", "-m", "inventory_service"]
    assert stop_signal == "SIGTERM"
    ignored = (default_project / ".dockerignore").read_text()
    assert ignored.splitlines()[1] == "*"  # nothing but what is listed goes into the context


def test_compose_runs_postgres_then_a_one_shot_migration_then_the_app_on_one_core(
    default_project: Path,
) -> None:
    compose = yaml.safe_load((default_project / "compose.yaml").read_text())
    services = compose["services"]
    assert services["db"]["healthcheck"]["test"]
    (package,) = [path.parent.name for path in (default_project / "src").glob("*/__main__.py")]
    assert services["migrate"]["command"] == ["python", "-m", package, "migrate"]
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    app = services["app"]
    assert app["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert (app["cpus"], app["mem_limit"]) == (1.0, "4g")
    assert app["read_only"] is True


@pytest.fixture
def fresh_database(postgres_url: str) -> Iterator[str]:
    with scratch_database(postgres_url, "deploy_entrypoint") as url:
        yield url


def test_image_command_serves_and_drains_outside_a_container(
    default_project: Path, fresh_database: str
) -> None:
    """The Dockerfile's CMD with the Dockerfile's ENV and compose's app environment (as
    `docker compose up` runs it), after compose's migrate command."""
    image_env, command, stop_signal = _dockerfile_runtime(default_project)
    compose = yaml.safe_load((default_project / "compose.yaml").read_text())
    python, *arguments = compose["services"]["migrate"]["command"]
    assert python == "python"
    migrate = run(default_project, sys.executable, *arguments, DATABASE_URL=fresh_database)
    assert migrate.returncode == 0, migrate.stderr
    devdb = load_dev_module(default_project, "devdb")
    port = devdb.free_port()
    # PATH inside the image points at /app/.venv; here the template's venv plays that part.
    env = tool_env(
        default_project, **{key: value for key, value in image_env.items() if key != "PATH"}
    )
    env |= {key: str(value) for key, value in compose["services"]["app"]["environment"].items()}
    env |= {"DATABASE_URL": fresh_database, "PORT": str(port)}
    argv = [sys.executable if command[0] == "python" else command[0], *command[1:]]
    process = subprocess.Popen(
        argv, cwd=default_project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_ready(process, f"{base}/readyz")
        created = httpx.post(
            f"{base}/items", json={"name": "crate", "price_cents": 1200}, timeout=5
        )
        assert created.status_code == 201, created.text
        # compose.yaml's header and docs/deploying.md send the user to /docs.
        assert httpx.get(f"{base}/docs", timeout=5).status_code == 200
        assert (
            httpx.get(f"{base}/items/{created.json()['id']}", timeout=5).json()["name"] == "crate"
        )
        stop = getattr(signal, stop_signal)
        process.send_signal(stop)
        # uvicorn drains, runs the lifespan shutdown, then re-raises the signal it caught: outside
        # a PID namespace that ends the process (as PID 1 of a container it exits 0, below).
        output, _ = process.communicate(
            timeout=float(env.get("TIMEOUT_GRACEFUL_SHUTDOWN", "20")) + 10
        )
        assert process.returncode == -stop
        assert b"Application shutdown complete" in output
        assert b"pool_closed" in output
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert image_env["HOST"] == "0.0.0.0"


def _wait_until_ready(process: "subprocess.Popen[bytes]", url: str) -> None:
    try:
        wait_until_answering(process, url, what="the image command", seconds=30)
    except RuntimeError:
        output, _ = process.communicate()
        raise AssertionError(
            f"the image command did not become ready: {output.decode()[-2000:]}"
        ) from None


@pytest.mark.parametrize("python_version", ["3.11", "3.12", "3.13"])
def test_base_images_are_pinned_by_digest_beside_their_tag_for_dependabot(
    python_version: str, tmp_path: Path
) -> None:
    """A tag is moved by each rebuild upstream: the digest is what CI built on. Dependabot reads
    `FROM name:tag@sha256:...` and moves both; it cannot follow an ARG in a FROM line."""
    project = bake(tmp_path, python_version=python_version)
    stages = [
        line.split()[1]
        for line in (project / "Dockerfile").read_text().splitlines()
        if line.startswith("FROM ")
    ]
    assert len(stages) == 3
    for image in stages:
        assert re.fullmatch(r"[a-z0-9./-]+:[\w.-]+@sha256:[0-9a-f]{64}", image), image
    assert stages[1] == stages[2]  # the build and the runtime: the same Python
    assert stages[1].startswith(f"python:{python_version}.")


def test_the_dependency_layer_survives_a_readme_edit(default_project: Path) -> None:
    """Only pyproject.toml and uv.lock are copied before the dependencies are installed."""
    text = (default_project / "Dockerfile").read_text()
    before_dependencies = text.split("--no-install-project", 1)[0]
    copied = [line for line in before_dependencies.splitlines() if line.startswith("COPY ")]
    assert copied[-1] == "COPY pyproject.toml uv.loc[k] ./"
    assert "README.md" not in "\n".join(copied)
    assert "COPY README.md ./" in text.split("--no-install-project", 1)[1]


def test_the_image_command_as_pid_1_drains_and_exits_0_on_sigterm(
    default_project: Path, fresh_database: str
) -> None:
    """In a pod the server is PID 1 of its PID namespace: the SIGTERM uvicorn re-raises after its
    drain has no default action there, so the container exits 0 (the guide says so)."""
    migrate = run(default_project, "alembic", "upgrade", "heads", DATABASE_URL=fresh_database)
    assert migrate.returncode == 0, migrate.stderr
    image_env, command, _ = _dockerfile_runtime(default_project)
    port = load_dev_module(default_project, "devdb").free_port()
    env = tool_env(default_project, **{k: v for k, v in image_env.items() if k != "PATH"})
    env |= {"DATABASE_URL": fresh_database, "PORT": str(port), "METRICS_PORT": "0"}
    argv = ["unshare", "--pid", "--fork", "--kill-child", sys.executable, *command[1:]]
    process = subprocess.Popen(
        argv, cwd=default_project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        _wait_until_ready(process, f"http://127.0.0.1:{port}/readyz")
        (server,) = psutil.Process(process.pid).children()
        server.send_signal(signal.SIGTERM)  # what the kubelet sends to the container's PID 1
        output, _ = process.communicate(timeout=40)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert b"pool_closed" in output
    assert process.returncode == 0, output.decode()[-2000:]
