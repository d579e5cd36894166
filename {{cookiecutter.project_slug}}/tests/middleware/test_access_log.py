"""middleware/access_log.py: one structured line per request, sampled; around a five-line inline
app in the edge middleware, then in the log of the served process."""

import json
from pathlib import Path

import httpx

from ..conftest import BASE, serve

TEMPLATE = "/{{ cookiecutter.resource_plural }}/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}"


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
