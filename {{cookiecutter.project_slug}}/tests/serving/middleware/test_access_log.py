"""middleware/edge/access_log.py: one structured line per request, sampled; around a five-line
inline app in the edge middleware, then in the log of the served process."""

import json
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.edge import EdgeMiddleware, access_log
from {{ cookiecutter.package_name }}.serving.middleware.edge.access_log import AccessLog
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_metrics import RequestMetrics

from ...conftest import BASE, TEMPLATE, in_process_client, serve
from .conftest import ROUTE, answering

Events = list[MutableMapping[str, Any]]


async def _lines(app: Any, log: AccessLog, events: Events, path: str = "/things/42") -> Events:
    """The access lines logged for one GET of `path` through the edge middleware around `app`."""
    edge = EdgeMiddleware(app, metrics=RequestMetrics(Metrics()), access_log=log)
    async with in_process_client(edge) as http:
        await http.get(path)
    return [event for event in events if event["event"] == "request"]


async def test_a_line_names_the_route_template_never_the_raw_path(logged: Events) -> None:
    (line,) = await _lines(answering(404), AccessLog(), logged)
    assert line["route"] == ROUTE
    assert (line["method"], line["status"], line["client"]) == ("GET", 404, "127.0.0.1")
    assert line["duration_ms"] >= 0
    assert "/things/42" not in str(line)


async def test_a_path_no_route_matched_is_logged_under_one_label(logged: Events) -> None:
    (line,) = await _lines(answering(404, route=None), AccessLog(), logged, "/no/such/42")
    assert line["route"] == "<unmatched>"


@pytest.mark.parametrize(
    ("mode", "sample", "status", "lines"),
    [
        ("all", 1.0, 200, 1),
        ("all", 0.0, 200, 0),
        ("all", 0.0, 404, 1),
        ("errors", 1.0, 200, 0),
        ("errors", 1.0, 503, 1),
    ],
)
async def test_errors_are_always_logged_and_successes_as_the_mode_and_sample_say(
    logged: Events, mode: Any, sample: float, status: int, lines: int
) -> None:
    assert len(await _lines(answering(status), AccessLog(mode, sample), logged)) == lines


async def test_a_slow_request_is_logged_whatever_the_mode(
    logged: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(access_log, "SLOW_SECONDS", 0.0)  # every request counts as slow
    assert len(await _lines(answering(200), AccessLog("errors"), logged)) == 1


def test_every_request_writes_one_json_access_line_with_the_route_template(
    database_url: str, tmp_path: Path, auth_env: dict[str, str], auth_headers: dict[str, str]
) -> None:
    log = tmp_path / "server.log"
    with serve(log, **auth_env, DATABASE_URL=database_url) as base:
        response = httpx.get(
            f"{base}{BASE}/987654321", headers={"x-request-id": "line-check-1", **auth_headers}
        )
        assert response.status_code == 404
    lines = [json.loads(line) for line in log.read_text().splitlines() if "line-check-1" in line]
    assert len(lines) == 1
    line = lines[0]
    assert line["event"] == "request"
    assert line["route"] == TEMPLATE
    assert line["method"] == "GET"
    assert line["status"] == 404
    assert line["client"] == "127.0.0.1"
    assert line["duration_ms"] > 0


def test_access_log_errors_mode_skips_successes(
    database_url: str, tmp_path: Path, auth_env: dict[str, str]
) -> None:
    log = tmp_path / "server.log"
    with serve(log, **auth_env, DATABASE_URL=database_url, ACCESS_LOG="errors") as base:
        httpx.get(f"{base}/healthz", headers={"x-request-id": "ok-request"})
        httpx.get(f"{base}/nowhere", headers={"x-request-id": "missing-request"})
    text = log.read_text()
    assert "ok-request" not in text
    assert '"route": "<unmatched>"' in text or '"route":"<unmatched>"' in text
