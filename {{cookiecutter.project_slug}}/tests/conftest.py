"""Fixtures on a real PostgreSQL: DATABASE_URL when set, else a throwaway server for the session.

Each session gets a database of its own, migrated by alembic, so that several test runs can share
one server.
"""

import asyncio
{%- if cookiecutter.auth == "api_key" %}
import hashlib
{%- endif %}
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest
from devdb import ThrowawayPostgres, free_port
from fastapi import FastAPI
from fastapi.routing import APIRoute
{%- if cookiecutter.auth == "jwt" %}
from loadtest.drive.issuer import Issuer
{%- endif %}
from loadtest.drive.service import wait_until_healthy
from starlette.types import ASGIApp, Receive, Scope, Send

from {{ cookiecutter.package_name }}.db import Database
from {{ cookiecutter.package_name }}.kit import Resource, field_type
from {{ cookiecutter.package_name }}.kit.state import STATE_KEY, ServiceState
from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from .declared import first_resource, new_body, rows_in, run_sql


def _one_row_route(resource: Resource) -> tuple[str, str]:
    """The route template of a resource's one-row routes ("/items/{item_id}") and its path
    parameter ("item_id"), as the resource's router declares them."""
    templates = {route.path for route in resource.router.routes if isinstance(route, APIRoute)}
    template = next(path for path in sorted(templates) if path.startswith(resource.prefix + "/{"))
    return template, template.removeprefix(resource.prefix + "/{").removesuffix("}")


PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The machinery's tests run against the first resource of serving/resources.py, whatever its
# fields and name: its collection, its one-row route template and that route's path parameter.
BASE = first_resource().prefix
TEMPLATE, ID_FIELD = _one_row_route(first_resource())
{%- if cookiecutter.auth == "jwt" %}
# The scopes a token needs unless the settings name others.
READ_SCOPE: str = Settings.model_fields["jwt_read_scope"].default
WRITE_SCOPE: str = Settings.model_fields["jwt_write_scope"].default
{%- endif %}
PROBLEM = "application/problem+json"
{%- if cookiecutter.auth == "api_key" %}
API_KEY = "test-" + secrets.token_urlsafe(24)
{%- endif %}


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


async def count_rows(database_url: str, table: str | None = None) -> int:
    """Rows in `table` (the first resource's unless named)."""
    return await rows_in(database_url, table or first_resource().table)


def first_field(*kinds: str, required: bool = False) -> str | None:
    """The first resource's first declared field of one of `kinds` (of any kind when none are
    named; only a required one if `required`), or None when it declares no such field."""
    for name, info in first_resource().fields.model_fields.items():
        marker = field_type(info.metadata)
        if kinds and (marker is None or marker.kind not in kinds):
            continue
        if not required or info.is_required():
            return name
    return None


async def create(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    """A new row of the first resource through the API (a fresh valid body, `fields` on top)."""
    response = await client.post(BASE, json=new_body(**fields))
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The response is a problem+json answer of `status`; returns its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert {"type", "title", "status", "detail"} <= body.keys()
    assert body["status"] == status
    return body


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    # Outside pytest's temporary root, which a pytest session starting meanwhile resets to 0700:
    # the server's own user could then no longer reach its data to stop it.
    folder = Path(tempfile.mkdtemp(prefix="test-postgres-"))
    try:
        with ThrowawayPostgres(folder / "data") as server:
            yield server.url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def database_url(server_url: str) -> Iterator[str]:
    name = f"test_{{ cookiecutter.package_name }}_{secrets.token_hex(4)}"
    asyncio.run(run_sql(server_url, f'CREATE DATABASE "{name}"'))
    url = with_database(server_url, name)
    subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "heads"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": url},
        check=True,
        capture_output=True,
    )
    yield url
    asyncio.run(run_sql(server_url, f'DROP DATABASE "{name}" WITH (FORCE)'))


{%- if cookiecutter.auth == "jwt" %}


@pytest.fixture(scope="session")
def issuer() -> Iterator[Issuer]:
    """A local OIDC issuer: signing keys, tokens, and its JWKS served over HTTP."""
    with Issuer() as running:
        yield running


@pytest.fixture(scope="session")
def auth_settings(issuer: Issuer) -> dict[str, Any]:
    """The settings that let a test's credentials in (auth=jwt: this session's issuer)."""
    return issuer.settings()


@pytest.fixture(scope="session")
def auth_headers(issuer: Issuer) -> dict[str, str]:
    """Credentials that may read and write."""
    return {"Authorization": f"Bearer {issuer.token(scope=f'{READ_SCOPE} {WRITE_SCOPE}')}"}
{%- elif cookiecutter.auth == "api_key" %}


@pytest.fixture(scope="session")
def auth_settings() -> dict[str, Any]:
    """The settings that let a test's credentials in (auth=api_key: the digest of API_KEY)."""
    return {"api_key_hashes": [hashlib.sha256(API_KEY.encode()).hexdigest()]}


@pytest.fixture(scope="session")
def auth_headers() -> dict[str, str]:
    """Credentials that may read and write."""
    return {"X-API-Key": API_KEY}
{%- else %}


@pytest.fixture(scope="session")
def auth_settings() -> dict[str, Any]:
    """The settings that let a test's credentials in: none, this service has no authentication."""
    return {}


@pytest.fixture(scope="session")
def auth_headers() -> dict[str, str]:
    """Credentials that may read and write: none needed."""
    return {}
{%- endif %}


@pytest.fixture(scope="session")
def auth_env(auth_settings: dict[str, Any]) -> dict[str, str]:
    """auth_settings as environment variables, for a served process."""
    return {
        name.upper(): ",".join(value) if isinstance(value, list) else str(value)
        for name, value in auth_settings.items()
    }


@pytest.fixture(scope="session")
def settings(database_url: str, auth_settings: dict[str, Any]) -> Settings:
    return Settings(
        database_url=database_url,
        app_env="test",
        pool_min_size=2,
        pool_max_size=10,
        **auth_settings,
    )


# The lifespan state of each app started in-process, handed to its requests as the server does.
_running: "weakref.WeakKeyDictionary[FastAPI, dict[str, Any]]" = weakref.WeakKeyDictionary()


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[ServiceState]:
    """Run `app`'s lifespan (pool, route handlers); its state reaches every in-process request."""
    async with app.router.lifespan_context(app) as state:
        assert state is not None
        _running[app] = dict(state)
        try:
            yield state[STATE_KEY]
        finally:
            del _running[app]


def _with_lifespan_state(app: ASGIApp, state: dict[str, Any]) -> ASGIApp:
    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        # What uvicorn does: a shallow copy of the lifespan state in every request's scope.
        await app({**scope, "state": dict(state)}, receive, send)

    return serve


@pytest.fixture
async def database(settings: Settings) -> AsyncIterator[Database]:
    """A pool of one connection, so that the next lease gets the connection the last one left
    (tests/test_db.py, tests/test_db_release.py)."""
    single = settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1})
    pool = await Database.connect(single, "one-connection-test")
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture(scope="session")
def app_metrics() -> Metrics:
    """The registry of the session's app (`app`)."""
    return Metrics()


@pytest.fixture(scope="session")
async def app(settings: Settings, app_metrics: Metrics) -> AsyncIterator[FastAPI]:
    application = create_app(settings, metrics=app_metrics)
    async with lifespan(application):
        yield application


def in_process_client(
    app: ASGIApp, headers: dict[str, str] | None = None, *, base_url: str = "http://test"
) -> httpx.AsyncClient:
    """A client that calls `app` (any ASGI app) in-process, with `headers` on every request;
    an app started with `lifespan` sees its lifespan state."""
    state = _running.get(app) if isinstance(app, FastAPI) else None
    target = app if state is None else _with_lifespan_state(app, state)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=target), base_url=base_url, headers=headers
    )


@asynccontextmanager
async def started(
    app: FastAPI, headers: dict[str, str] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """`app` started (its lifespan run: pool, route handlers) and a client of it in-process."""
    async with lifespan(app), in_process_client(app, headers) as http:
        yield http


@pytest.fixture(scope="session")
async def client(app: FastAPI, auth_headers: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app in-process, with credentials that may read and write."""
    async with in_process_client(app, auth_headers) as http:
        yield http


@pytest.fixture(scope="session")
def served_metrics_port() -> int:
    return free_port()


@contextmanager
def serve(log: Path, **env: str) -> Iterator[str]:
    """The real server process (`python -m {{ cookiecutter.package_name }}`) on a free TCP port,
    its output in `log`; yields its base URL once /healthz answers.

    `env` comes on top of this process's environment minus DATABASE_URL (a test names the
    database its server uses); /metrics is on a free port unless METRICS_PORT says otherwise.
    """
    with serve_process(log, **env) as (base, _):
        yield base


@contextmanager
def serve_process(log: Path, **env: str) -> Iterator[tuple[str, "subprocess.Popen[bytes]"]]:
    """As `serve`, yielding the process too (a test that kills it); stopped after, if alive."""
    port = free_port()
    inherited = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    variables = {
        **inherited,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "METRICS_PORT": str(free_port()),
        **env,
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "{{ cookiecutter.package_name }}"],
            env=variables,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until_healthy(base, process)
        except RuntimeError:
            state = "did not answer" if process.poll() is None else f"exited ({process.returncode})"
            raise RuntimeError(f"the server {state}: {log.read_text()[-2000:]}") from None
        yield base, process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="session")
def served_url(
    database_url: str,
    served_metrics_port: int,
    auth_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """One server process for the session, its /metrics listener on `served_metrics_port`."""
    log = tmp_path_factory.mktemp("served") / "server.log"
    env = {**auth_env, "DATABASE_URL": database_url, "METRICS_PORT": str(served_metrics_port)}
    with serve(log, **env) as base:
        yield base


@pytest.fixture
async def connection(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of its own to the session's database (catalog queries, EXPLAIN)."""
    connection = await asyncpg.connect(database_url)
    try:
        yield connection
    finally:
        await connection.close()
