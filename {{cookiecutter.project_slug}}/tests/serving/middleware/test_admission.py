"""Admission by requests in flight (middleware/admission.py), around a five-line inline app."""

import asyncio

import httpx
import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Scope, Send

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.admission import AdmissionMiddleware

from ...conftest import in_process_client


class _HeldApp:
    """Answers 200 once `release` is set; tells `entered` of every request that reached it."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered: asyncio.Queue[str] = asyncio.Queue()
        self.reached = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached += 1
        self.entered.put_nowait(scope["path"])
        if scope["path"] == "/boom":
            raise RuntimeError("boom")
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _client(app: AdmissionMiddleware) -> httpx.AsyncClient:
    return in_process_client(app)


def _sample(metrics: Metrics, name: str) -> float | None:
    return metrics.registry.get_sample_value(name)


async def test_a_request_over_the_in_flight_limit_gets_503_at_once() -> None:
    inner, metrics = _HeldApp(), Metrics()
    app = AdmissionMiddleware(inner, limit=3, metrics=metrics)
    async with _client(app) as http:
        held = [asyncio.create_task(http.get("/items/1")) for _ in range(3)]
        for _ in range(3):
            await inner.entered.get()  # the three requests are inside the app
        assert _sample(metrics, "http_requests_in_flight") == 3
        refused = await asyncio.wait_for(http.get("/items/1"), timeout=1)  # not queued
        inner.release.set()
        admitted = await asyncio.gather(*held)
    assert refused.status_code == 503
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["retry-after"] == "1"
    assert "3 requests at once" in refused.json()["detail"]
    assert [response.status_code for response in admitted] == [200] * 3
    assert inner.reached == 3  # the refused request never reached the app
    assert _sample(metrics, "http_admission_refused_total") == 1
    assert _sample(metrics, "http_requests_in_flight") == 0
    assert _sample(metrics, "http_admission_limit") == 3


async def test_the_probes_are_never_refused() -> None:
    inner = _HeldApp()
    app = AdmissionMiddleware(inner, limit=1, metrics=Metrics())
    async with _client(app) as http:
        held = asyncio.create_task(http.get("/items"))
        await inner.entered.get()  # the one place is taken
        probes = [asyncio.create_task(http.get(path)) for path in ("/healthz", "/readyz")]
        assert {await inner.entered.get(), await inner.entered.get()} == {"/healthz", "/readyz"}
        inner.release.set()
        statuses = [response.status_code for response in await asyncio.gather(held, *probes)]
    assert statuses == [200, 200, 200]


async def test_a_request_that_fails_gives_its_place_back() -> None:
    inner, metrics = _HeldApp(), Metrics()
    app = AdmissionMiddleware(inner, limit=1, metrics=metrics)
    async with _client(app) as http:
        for _ in range(3):
            with pytest.raises(RuntimeError):
                await http.get("/boom")
        inner.release.set()
        response = await http.get("/items")
    assert response.status_code == 200
    assert _sample(metrics, "http_requests_in_flight") == 0


async def test_a_request_waiting_for_its_body_holds_no_place() -> None:
    inner, metrics = _HeldApp(), Metrics()
    inner.release.set()
    app = AdmissionMiddleware(inner, limit=1, metrics=metrics)
    body_sent = asyncio.Event()
    sent: list[Message] = []

    async def slow_body() -> Message:
        await body_sent.wait()  # the client has sent its head, not its body
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/items",
        "headers": [(b"content-length", b"2")],
    }
    waiting = asyncio.create_task(app(scope, slow_body, send))
    async with _client(app) as http:
        served = await asyncio.wait_for(http.get("/items"), timeout=1)  # the one place is free
        assert served.status_code == 200
        assert inner.reached == 1
        body_sent.set()
        await asyncio.wait_for(waiting, timeout=1)
    assert inner.reached == 2  # then the waiting request is served, its body read again
    assert sent[0]["status"] == 200
    assert _sample(metrics, "http_requests_in_flight") == 0


async def test_a_client_gone_before_its_body_never_reaches_the_app() -> None:
    inner = _HeldApp()
    app = AdmissionMiddleware(inner, limit=1, metrics=Metrics())

    async def gone() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        raise AssertionError("nothing is sent to a client that is gone")

    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/items",
        "headers": [(b"transfer-encoding", b"chunked")],
    }
    with pytest.raises(ClientDisconnect):
        await app(scope, gone, send)
    assert inner.reached == 0
