"""`make dev` of a bake: the service with reload, one log line per request as in production; in an
auth bake with development credentials it prints, and in a jobs bake with a worker beside it;
`make worker` with the worker's settings alone."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from .baking import VENV_BIN, bake, load_dev_module, run, tool_env
from .serving import migrated_database, wait_until_answering


def test_make_dev_logs_each_request_once(default_project: Path, postgres_url: str) -> None:
    port = load_dev_module(default_project, "devdb").free_port()
    with migrated_database(default_project, postgres_url, "make_dev") as url:
        process = subprocess.Popen(
            ["make", f"BIN={VENV_BIN}", f"PORT={port}", "dev"],
            cwd=default_project,
            env=tool_env(default_project, DATABASE_URL=url),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the whole group, as from a terminal
        )
        try:
            wait_until_answering(process, f"http://127.0.0.1:{port}/healthz", what="make dev")
            assert httpx.get(f"http://127.0.0.1:{port}/items/1", timeout=5).status_code == 404
        finally:
            os.killpg(process.pid, signal.SIGINT)
            output, _ = process.communicate(timeout=30)
    lines = [line for line in output.decode(errors="replace").splitlines() if "/items/" in line]
    assert len(lines) == 1, lines  # the service's access line, not uvicorn's beside it


def _serve_make_dev(
    project: Path, url: str, port: int, log: Path, *arguments: str
) -> "subprocess.Popen[bytes]":
    """`make dev` on `url`'s database, its output into `log`; returns once it answers."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            ["make", f"BIN={VENV_BIN}", f"PORT={port}", *arguments, "dev"],
            cwd=project, env=tool_env(project, DATABASE_URL=url), stdout=sink,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    wait_until_answering(process, f"http://127.0.0.1:{port}/healthz", what="make dev")
    return process


def _stop(process: "subprocess.Popen[bytes]") -> None:
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C, as from a terminal
    process.wait(timeout=60)


def test_make_dev_of_an_api_key_jobs_bake_prints_a_key_that_opens_the_api_and_moves_the_worker(
    tmp_path: Path, postgres_url: str
) -> None:
    """The key `make dev` prints is let in, no key made by hand; the worker's metrics go to
    WORKER_METRICS_PORT, so that a 9091 already taken does not stop it."""
    project = bake(tmp_path / "bake", auth="api_key", jobs="postgres", resource="product")
    free_port = load_dev_module(project, "devdb").free_port
    port, worker_port, log = free_port(), free_port(), tmp_path / "dev.log"
    with socket.socket() as taken, migrated_database(project, postgres_url, "dev_key") as url:
        with contextlib.suppress(OSError):  # taken by someone else: as good
            taken.bind(("0.0.0.0", 9091))
            taken.listen()
        process = _serve_make_dev(project, url, port, log, f"WORKER_METRICS_PORT={worker_port}")
        try:
            metrics = f"http://127.0.0.1:{worker_port}/metrics"
            wait_until_answering(process, metrics, what="make dev's worker")
            key = re.search(r"X-API-Key: (\S+)", log.read_text())
            assert key, log.read_text()[-3000:]
            products = f"http://127.0.0.1:{port}/products"
            assert httpx.get(products, timeout=5).status_code == 401
            opened = httpx.get(products, headers={"X-API-Key": key[1]}, timeout=5)
            assert opened.status_code == 200, opened.text
        finally:
            _stop(process)
    # Never in production: outside APP_ENV=dev the development credentials are refused.
    refused = run(project, sys.executable, "-m", "devauth", "--", "true", APP_ENV="prod")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "APP_ENV=dev only" in refused.stderr


def test_make_dev_of_a_jwt_bake_verifies_the_tokens_make_dev_token_prints(
    tmp_path: Path, postgres_url: str
) -> None:
    project = bake(tmp_path / "bake", auth="jwt")
    port, log = load_dev_module(project, "devdb").free_port(), tmp_path / "dev.log"
    with migrated_database(project, postgres_url, "dev_token") as url:
        process = _serve_make_dev(project, url, port, log)
        try:
            items = f"http://127.0.0.1:{port}/items"
            assert httpx.get(items, timeout=5).status_code == 401
            tokens = {
                scope: run(project, "make", "-s", f"BIN={VENV_BIN}", "dev-token", *scope)
                for scope in [(), ("SCOPE=items:read",)]
            }
            assert all(token.returncode == 0 for token in tokens.values()), tokens
            every, read = (f"Bearer {token.stdout.strip()}" for token in tokens.values())
            assert httpx.get(items, headers={"Authorization": every}, timeout=5).status_code == 200
            body = {"name": "crate", "price_cents": 1200}
            written = httpx.post(items, json=body, headers={"Authorization": every}, timeout=5)
            assert written.status_code == 201, written.text
            refused = httpx.post(items, json=body, headers={"Authorization": read}, timeout=5)
            assert refused.status_code == 403, refused.text
        finally:
            _stop(process)


def test_make_worker_checks_no_key_and_needs_no_api_key_hashes(
    tmp_path: Path, postgres_url: str
) -> None:
    """As in production (APP_ENV=prod), with the database and none of the server's keys."""
    project = bake(tmp_path / "bake", auth="api_key", jobs="postgres")
    metrics_port = load_dev_module(project, "devdb").free_port()
    with migrated_database(project, postgres_url, "worker_no_keys") as url:
        env = tool_env(project, DATABASE_URL=url, METRICS_PORT=str(metrics_port), APP_ENV="prod")
        env.pop("API_KEY_HASHES", None)
        log = tmp_path / "worker.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                ["make", f"BIN={VENV_BIN}", "worker"], cwd=project, env=env,
                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            metrics = f"http://127.0.0.1:{metrics_port}/metrics"
            wait_until_answering(process, metrics, what="make worker")
        except RuntimeError:
            raise AssertionError(log.read_text()[-3000:]) from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=60)
