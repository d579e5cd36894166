"""What the middleware unit tests share: a five-line app that answers as a routed one, and the
log events captured as production renders them."""

from collections.abc import Iterator, MutableMapping
from types import SimpleNamespace
from typing import Any

import pytest
import structlog
from starlette.types import ASGIApp, Receive, Scope, Send
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from {{ cookiecutter.package_name }}.serving.middleware import edge as edge_module

ROUTE = "/things/{thing_id}"


def answering(status: int, route: str | None = ROUTE) -> ASGIApp:
    """An app that answers `status` with an empty body after matching `route` (None: no route)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if route is not None:
            scope["route"] = SimpleNamespace(path=route)  # what the router leaves in the scope
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[MutableMapping[str, Any]]]:
    """The events logged meanwhile, with the context (the request id) merged in as in production."""
    # Loggers cache their configuration on first use (cache_logger_on_first_use): one already used
    # by an earlier test would bypass the capture. A fresh proxy resolves inside it; the access
    # line follows the configuration of each line by itself (observability/direct_logger.py).
    monkeypatch.setattr(edge_module, "logger", structlog.get_logger(edge_module.__name__))
    with capture_logs(processors=[merge_contextvars]) as events:
        yield events
