"""observability/logging.py: the real logger masks the database password, in the lines of the
service and of uvicorn, tracebacks included; every line is JSON."""

import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from devdb import free_port

from {{ cookiecutter.package_name }}.observability.redaction import MASK

from ..conftest import BASE, serve


def _with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    user = parts.username or "postgres"
    return urlunsplit(
        parts._replace(netloc=f"{user}:{password}@{parts.hostname}:{parts.port or 5432}")
    )


def test_password_is_masked_in_log_lines_and_tracebacks_of_the_real_logger(
    database_url: str, auth_settings: dict[str, Any]
) -> None:
    password = "canary-" + secrets.token_hex(8)
    url = _with_password(database_url, password)
    script = (
        "import structlog\n"
        "from {{ cookiecutter.package_name }}.observability.logging import configure_logging\n"
        "from {{ cookiecutter.package_name }}.settings import Settings\n"
        f"settings = Settings(database_url={url!r}, app_env='prod', **{auth_settings!r})\n"
        "configure_logging(settings)\n"
        "log = structlog.get_logger()\n"
        "log.info('connecting', dsn=settings.dsn, raw=settings.dsn.split('@')[0])\n"
        "try:\n"
        "    raise ConnectionError('could not connect to ' + settings.dsn)\n"
        "except ConnectionError:\n"
        "    log.exception('connect_failed')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    output = result.stdout + result.stderr
    assert "connect_failed" in output
    assert "ConnectionError" in output
    assert password not in output
    assert MASK in output


@pytest.mark.parametrize("reachable", [True, False], ids=["database-up", "database-down"])
def test_served_process_never_logs_the_database_password(
    database_url: str, reachable: bool, auth_env: dict[str, str], tmp_path: Path
) -> None:
    password = "canary-" + secrets.token_hex(8)
    url = _with_password(database_url, password)
    if not reachable:
        url = url.replace(f":{urlsplit(url).port}/", f":{free_port()}/")
    log = tmp_path / "server.log"
    env = {**auth_env, "DATABASE_URL": url, "LOG_LEVEL": "debug", "POOL_ACQUIRE_TIMEOUT": "0.5"}
    if reachable:
        with serve(log, **env) as base, httpx.Client(base_url=base, timeout=5) as http:
            http.get("/readyz")
            http.get(f"{BASE}/1")
            http.post(BASE, content=b"{", headers={"content-type": "application/json"})
    else:
        # The lifespan cannot open the pool: the process must exit rather than serve.
        with pytest.raises(RuntimeError, match="exited"), serve(log, **env):
            pass
    output = log.read_text()
    assert output.strip(), "the process logged nothing: the check would prove nothing"
    assert password not in output
    # uvicorn's own records (start-up failure, tracebacks) too: every line is JSON.
    for line in output.splitlines():
        assert isinstance(json.loads(line), dict), line
