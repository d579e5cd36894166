"""bench/apps/production_fastapi.py, the production configuration's baseline, does what it is
compared for: it verifies every token against the issuer's JWKS and the route's scope, answers a
keyed create's retry from its stored answer, and traces through OpenTelemetry's instrumentation
with a parent-based 10 % sampler. Its real server over TCP, on a real PostgreSQL, the jwt bake's
issuer, and an OTLP receiver collecting what its exporter sends."""

import asyncio
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench.driver import server_env
from bench.run import app_commands
from tests.baking import TEMPLATE, load_dev_module, load_loadtest
from tests.serving import fetch, migrated_database, serve_process

SAMPLED, UNSAMPLED = "01", "00"
READ_WRITE = "items:read items:write"
SEED = "INSERT INTO items (name, price_cents) SELECT 'seeded', n FROM generate_series(1, 10) n"


class Collector:
    """An OTLP/HTTP receiver on 127.0.0.1: every span it was sent, as (trace id, kind, name)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, int, str]] = []
        self.arrived = threading.Condition()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = ExportTraceServiceRequest()
                request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
                with collector.arrived:
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            collector.spans += [
                                (span.trace_id.hex(), span.kind, span.name) for span in scope.spans
                            ]
                    collector.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1/traces"

    def trace(self, trace_id: str, timeout: float = 30) -> list[tuple[int, str]]:
        """The spans of `trace_id` once its server span has arrived: (kind, name) each."""

        def server_span_in() -> bool:
            return any(t == trace_id and kind == 2 for t, kind, _ in self.spans)  # SERVER

        with self.arrived:
            assert self.arrived.wait_for(server_span_in, timeout), f"no server span of {trace_id}"
            return [(kind, name) for t, kind, name in self.spans if t == trace_id]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Baseline(NamedTuple):
    url: str
    database_url: str
    issuer: Any
    collector: Collector


@pytest.fixture(scope="module")
def baseline(jwt_project: Path, postgres_url: str) -> Iterator[Baseline]:
    port = load_dev_module(jwt_project, "devdb").free_port()
    collector = Collector()
    with (
        migrated_database(jwt_project, postgres_url, "production_fastapi") as database_url,
        load_loadtest(jwt_project, "drive.issuer").Issuer() as issuer,
    ):
        asyncio.run(fetch(database_url, SEED))
        settings = {name.upper(): str(value) for name, value in issuer.settings().items()}
        env = server_env(jwt_project, database_url, port, **settings,
                         OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=collector.endpoint,
                         OTEL_BSP_SCHEDULE_DELAY="50")  # fmt: skip
        command = app_commands(jwt_project, port)["production_fastapi"]
        process = serve_process(command, TEMPLATE, env, port)
        try:
            yield Baseline(f"http://127.0.0.1:{port}", database_url, issuer, collector)
        finally:
            process.terminate()
            process.wait(timeout=30)
            collector.close()


def _bearer(baseline: Baseline, **claims: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {baseline.issuer.token(**claims)}"}


def _traceparent(flags: str) -> tuple[str, dict[str, str]]:
    """A new trace id under a parent of `flags`, one the 10 % ratio alone would decide the other
    way (TraceIdRatioBased compares its low 64 bits with a bound): only the parent decides."""
    low = "ffffffffffffffff" if flags == SAMPLED else "0000000000000001"
    trace_id = uuid.uuid4().hex[:16] + low
    return trace_id, {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-{flags}"}


def test_the_baseline_answers_with_a_token_of_the_issuer(baseline: Baseline) -> None:
    headers = _bearer(baseline, scope=READ_WRITE)
    assert httpx.get(f"{baseline.url}/items/1", headers=headers).json()["id"] == 1
    page = httpx.get(f"{baseline.url}/items", params={"after": 0, "limit": 2}, headers=headers)
    assert [item["id"] for item in page.json()["data"]] == [1, 2]


@pytest.mark.parametrize(
    ("case", "claims"),
    [
        ("expired", {"lifetime": -120}),  # past the 30 s leeway
        ("another audience", {"aud": "another-service"}),
        ("another issuer", {"iss": "https://elsewhere.test"}),
    ],
)
def test_the_baseline_refuses_a_token_with_bad_claims(
    baseline: Baseline, case: str, claims: dict[str, Any]
) -> None:
    response = httpx.get(f"{baseline.url}/items/1", headers=_bearer(baseline, **claims))
    assert response.status_code == 401, case


def test_the_baseline_refuses_a_token_the_issuer_did_not_sign(baseline: Baseline) -> None:
    assert httpx.get(f"{baseline.url}/items/1").status_code == 401
    baseline.issuer.add_key("unpublished")  # a key of the issuer's own, never in its JWKS
    forged = {"Authorization": f"Bearer {baseline.issuer.token(kid='unpublished')}"}
    assert httpx.get(f"{baseline.url}/items/1", headers=forged).status_code == 401
    token = baseline.issuer.token(scope=READ_WRITE)
    header, claims, _ = token.split(".")
    unsigned = {"Authorization": f"Bearer {header}.{claims}.c2lnbmF0dXJl"}
    assert httpx.get(f"{baseline.url}/items/1", headers=unsigned).status_code == 401


def test_the_baseline_checks_the_route_scope(baseline: Baseline) -> None:
    reader = _bearer(baseline, scope="items:read")
    assert httpx.get(f"{baseline.url}/items/1", headers=reader).status_code == 200
    body = {"name": "not written", "price_cents": 1}
    assert httpx.post(f"{baseline.url}/items", json=body, headers=reader).status_code == 403
    patched = httpx.patch(f"{baseline.url}/items/1", json={"quantity": 1}, headers=reader)
    assert patched.status_code == 403


def _rows_named(database_url: str, name: str) -> int:
    query = "SELECT count(*) AS n FROM items WHERE name = $1"
    (row,) = asyncio.run(fetch(database_url, query, name))
    return int(row["n"])


def test_a_keyed_create_is_written_once_and_its_retry_gets_the_stored_answer(
    baseline: Baseline,
) -> None:
    name = f"keyed {uuid.uuid4()}"
    key = str(uuid.uuid4())
    headers = {**_bearer(baseline, scope=READ_WRITE), "Idempotency-Key": key}
    body = {"name": name, "price_cents": 5, "quantity": 2}
    with httpx.Client(base_url=baseline.url, headers=headers) as client:
        first = client.post("/items", json=body)
        retry = client.post("/items", json=body)
    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json()
    assert retry.headers["Idempotency-Replayed"] == "true"
    assert _rows_named(baseline.database_url, name) == 1
    query = "SELECT answer FROM fastapi_idempotency_keys WHERE key = $1"
    assert len(asyncio.run(fetch(baseline.database_url, query, key))) == 1


def test_a_create_without_a_key_is_written_each_time(baseline: Baseline) -> None:
    name = f"unkeyed {uuid.uuid4()}"
    with httpx.Client(base_url=baseline.url, headers=_bearer(baseline, scope=READ_WRITE)) as client:
        for _ in range(2):
            response = client.post("/items", json={"name": name, "price_cents": 5})
            assert response.status_code == 201
            assert "Idempotency-Replayed" not in response.headers
    assert _rows_named(baseline.database_url, name) == 2


def test_a_sampled_parent_gets_the_instrumentation_spans_and_an_unsampled_one_none(
    baseline: Baseline,
) -> None:
    headers = _bearer(baseline, scope=READ_WRITE)
    dropped, unsampled = _traceparent(UNSAMPLED)
    kept, sampled = _traceparent(SAMPLED)
    assert httpx.get(f"{baseline.url}/items/3", headers={**headers, **unsampled}).is_success
    assert httpx.get(f"{baseline.url}/items/3", headers={**headers, **sampled}).is_success
    spans = baseline.collector.trace(kept)
    assert (2, "GET /items/{item_id}") in spans  # FastAPIInstrumentor's server span
    # asyncpg's client spans: the query, and the pool's reset query on release.
    assert [name for kind, name in spans if kind == 3] == ["SELECT", "SELECT"]
    # Exported in the order they ended: the dropped request's spans would have come first.
    assert all(trace_id != dropped for trace_id, _, _ in baseline.collector.spans)


def test_about_one_new_trace_in_ten_is_kept(baseline: Baseline) -> None:
    headers = _bearer(baseline, scope=READ_WRITE)
    before = {trace_id for trace_id, kind, _ in baseline.collector.spans if kind == 2}
    with httpx.Client(base_url=baseline.url, headers=headers) as client:
        for _ in range(300):
            assert client.get("/items/4").is_success
        marker, sampled = _traceparent(SAMPLED)
        assert client.get("/items/4", headers=sampled).is_success
    baseline.collector.trace(marker)  # every earlier span has arrived with it
    traces = {trace_id for trace_id, kind, _ in baseline.collector.spans if kind == 2}
    kept = len(traces - before - {marker})
    # Binomial(300, 0.1): 30 expected, outside 8..60 about once in a million runs.
    assert 8 <= kept <= 60, kept
