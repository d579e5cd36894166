"""Security basics: no internals in responses, no versions disclosed, no password in any log line,
and the headers a JSON API should send."""

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson
import pytest
from devdb import free_port
from fastapi import FastAPI

from {{ cookiecutter.package_name }}.app import create_app
from {{ cookiecutter.package_name }}.observability.redaction import MASK, RedactSecrets
from {{ cookiecutter.package_name }}.settings import Settings

BASE = "/{{ cookiecutter.resource_plural }}"
INTERNALS = (
    "Traceback",
    'File "',
    "asyncpg",
    "SELECT",
    "INSERT",
    "UPDATE ",
    "psycopg",
    "uvicorn",
    "line ",
)


def assert_reveals_nothing(response: httpx.Response) -> None:
    for marker in INTERNALS:
        assert marker not in response.text, f"{marker!r} in {response.status_code}: {response.text}"


@pytest.fixture(scope="module")
async def starved_app(database_url: str, auth_settings: dict[str, Any]) -> AsyncIterator[FastAPI]:
    """An app whose only connection the test can hold, so that the next request must time out."""
    settings = Settings(
        database_url=database_url,
        app_env="test",
        pool_min_size=1,
        pool_max_size=1,
        pool_acquire_timeout=0.2,
        **auth_settings,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_error_responses_reveal_no_stack_trace_sql_or_library(
    client: httpx.AsyncClient,
) -> None:
    responses = [
        await client.get(f"{BASE}/999999999"),
        await client.get("/nowhere"),
        await client.put(BASE),
        await client.post(BASE, content=b"{", headers={"content-type": "application/json"}),
        await client.post(BASE, json={"name": "x", "price_cents": -1}),
        await client.post(BASE, content=b"x", headers={"content-type": "text/plain"}),
        await client.get(f"{BASE}?after=1;SELECT"),
    ]
    assert sorted({response.status_code for response in responses}) == [400, 404, 405, 415, 422]
    for response in responses:
        assert response.headers["content-type"] == "application/problem+json"
        assert_reveals_nothing(response)


async def test_saturated_pool_answers_503_with_retry_after_and_no_internals(
    starved_app: FastAPI, auth_headers: dict[str, str]
) -> None:
    transport = httpx.ASGITransport(app=starved_app)
    async with (
        httpx.AsyncClient(
            transport=transport, base_url="http://test", headers=auth_headers
        ) as http,
        starved_app.state.db.pool.acquire(),
    ):
        response = await http.get(f"{BASE}/1")
    assert response.status_code == 503
    assert response.headers["retry-after"].isdigit()
    assert response.headers["content-type"] == "application/problem+json"
    assert_reveals_nothing(response)


def test_served_process_discloses_no_server_version(served_url: str) -> None:
    with httpx.Client(base_url=served_url) as http:
        for response in (http.get("/healthz"), http.get("/nowhere"), http.get(f"{BASE}/abc")):
            assert "server" not in response.headers
            assert "x-powered-by" not in response.headers
            assert "uvicorn" not in response.text.lower()
            assert "python" not in response.text.lower()


@pytest.mark.parametrize(
    "path", ["/healthz", f"{BASE}/999999999", f"{BASE}?limit=0", "/openapi.json"]
)
async def test_api_responses_carry_the_security_headers(
    client: httpx.AsyncClient, path: str
) -> None:
    headers = (await client.get(path)).headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
    assert "strict-transport-security" not in headers  # plain HTTP: browsers would ignore it


@pytest.mark.parametrize(
    "path", ["/healthz", f"{BASE}/999999999", f"{BASE}?limit=20", f"{BASE}?limit=0", "/docs"]
)
async def test_every_response_says_cache_control_no_store(
    client: httpx.AsyncClient, path: str
) -> None:
    assert (await client.get(path)).headers["cache-control"] == "no-store"


async def _docs_statuses(settings: Settings) -> list[int]:
    application = create_app(settings)
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        return [(await http.get(path)).status_code for path in ("/docs", "/redoc", "/openapi.json")]


async def test_docs_and_schema_are_off_in_prod_by_default(settings: Settings) -> None:
    assert await _docs_statuses(settings.model_copy(update={"app_env": "prod"})) == [404, 404, 404]


async def test_docs_in_prod_setting_turns_docs_and_schema_on(settings: Settings) -> None:
    on = settings.model_copy(update={"app_env": "prod", "docs_in_prod": True})
    assert await _docs_statuses(on) == [200, 200, 200]
    assert await _docs_statuses(settings) == [200, 200, 200]  # dev and test: always on


async def test_docs_page_may_load_its_scripts_but_is_not_sniffed_or_framed(
    client: httpx.AsyncClient,
) -> None:
    headers = (await client.get("/docs")).headers
    assert "content-security-policy" not in headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"


async def test_https_requests_get_strict_transport_security(app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as http:
        headers = (await http.get("/healthz")).headers
    assert headers["strict-transport-security"].startswith("max-age=")


def test_redaction_masks_an_orjson_rendered_bytes_line() -> None:
    line = orjson.dumps(
        {
            "event": "connect failed for postgresql://app:hunter2@db:5432/x",
            "other": "postgres://other:pa55@host/db",
            "exception": "Traceback...\nOSError: password hunter2 rejected",
            "count": 3,
        }
    )
    masked = RedactSecrets(["hunter2"])(None, "error", line)
    assert isinstance(masked, bytes)
    assert b"hunter2" not in masked
    assert b"pa55" not in masked
    event = orjson.loads(masked)
    assert event["event"] == "connect failed for postgresql://app:***@db:5432/x"
    assert event["count"] == 3
    assert MASK in event["exception"]


def test_redaction_masks_a_rendered_json_line_without_breaking_it() -> None:
    password = 'p"w\\d'
    line = json.dumps(
        {"event": "x", "dsn": f"postgresql://app:{password}@db/x", "pw": password, "email": "a@b.c"}
    )
    masked = RedactSecrets([password])(None, "info", line)
    assert isinstance(masked, str)
    assert password not in masked
    assert json.loads(masked) == {
        "event": "x",
        "dsn": "postgresql://app:***@db/x",
        "pw": MASK,
        "email": "a@b.c",
    }


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
    database_url: str, reachable: bool, auth_env: dict[str, str]
) -> None:
    password = "canary-" + secrets.token_hex(8)
    url = _with_password(database_url, password)
    if not reachable:
        url = url.replace(f":{urlsplit(url).port}/", f":{free_port()}/")
    port = free_port()
    env = {
        **os.environ,
        **auth_env,
        "DATABASE_URL": url,
        "PORT": str(port),
        "METRICS_PORT": str(free_port()),
        "LOG_LEVEL": "debug",
        "POOL_ACQUIRE_TIMEOUT": "0.5",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "{{ cookiecutter.package_name }}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        if reachable:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
                for _ in range(600):  # up to 30 s for start-up, polled: no event to wait on
                    try:
                        http.get("/healthz")
                        break
                    except httpx.TransportError:
                        if process.poll() is not None:
                            break
                        time.sleep(0.05)
                http.get("/readyz")
                http.get(f"{BASE}/1")
                http.post(BASE, content=b"{", headers={"content-type": "application/json"})
        else:
            process.wait(timeout=60)  # the lifespan cannot open the pool: the process must exit
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=60)
    assert output.strip(), "the process logged nothing: the check would prove nothing"
    assert password not in output
    # uvicorn's own records (start-up failure, tracebacks) too: every line is JSON.
    for line in output.splitlines():
        assert isinstance(json.loads(line), dict), line
