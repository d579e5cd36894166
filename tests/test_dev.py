"""`make dev` of a bake: the service with reload, one log line per request as in production."""

import os
import signal
import subprocess
from pathlib import Path

import httpx

from .baking import VENV_BIN, load_dev_module, tool_env
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
