"""The baked default service over real TCP: its middleware at work, and `make bench` end to end."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from .baking import TEMPLATE, VENV_BIN
from .serving import Served, migrated_database, start_service

ITEM_TEMPLATE = "/items/{item_id}"


@pytest.fixture(scope="module")
def database_url(default_project: Path, postgres_url: str) -> Iterator[str]:
    """A migrated database of this module's own on the shared PostgreSQL."""
    with migrated_database(default_project, postgres_url, "middleware_check") as url:
        yield url


@contextmanager
def serve(project: Path, database_url: str, log: Path, **env: str) -> Iterator[Served]:
    """The served default service with its access log on, stopped afterwards."""
    served = start_service(project, database_url, log, **{"ACCESS_LOG": "all", **env})
    try:
        yield served
    finally:
        served.process.terminate()
        served.process.wait(timeout=30)


def test_baked_service_middleware_over_tcp(
    default_project: Path, database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    # 127.0.0.1 stands for the proxy whose X-Request-ID the service keeps.
    with (
        serve(
            default_project,
            database_url,
            log,
            MAX_BODY_BYTES="1000",
            FORWARDED_ALLOW_IPS="127.0.0.1",
        ) as served,
        httpx.Client(base_url=served.url) as http,
    ):
        created = http.post(
            "/items",
            json={"name": "tcp", "price_cents": 1},
            headers={"x-request-id": "tmpl-create"},
        )
        assert created.status_code == 201
        assert created.headers["x-request-id"] == "tmpl-create"
        item_id = created.json()["id"]
        fetched = http.get(f"/items/{item_id}", headers={"x-request-id": "tmpl-get"})
        assert fetched.json() == created.json()
        assert fetched.headers["x-request-id"] == "tmpl-get"
        assert len(http.get("/healthz").headers["x-request-id"]) == 32

        oversize = http.post(
            "/items",
            content=b"{" + b" " * 2000 + b"}",
            headers={"content-type": "application/json"},
        )
        assert oversize.status_code == 413
        assert oversize.headers["content-type"] == "application/problem+json"

        assert http.get("/metrics").status_code == 404  # only on the metrics port
        metrics = httpx.get(f"http://127.0.0.1:{served.metrics_port}/metrics").text
        assert (
            f'http_requests_total{{method="GET",route="{ITEM_TEMPLATE}",status="200"}} 1.0'
            in metrics
        )
        assert f'/items/{item_id}"' not in metrics
        assert "db_pool_size" in metrics
        assert "event_loop_lag_seconds_count" in metrics

    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    get_lines = [line for line in lines if line.get("request_id") == "tmpl-get"]
    assert len(get_lines) == 1
    assert get_lines[0]["route"] == ITEM_TEMPLATE
    assert get_lines[0]["status"] == 200
    assert get_lines[0]["event"] == "request"


def test_baked_service_sheds_load_over_its_concurrency_limit(
    default_project: Path, database_url: str, tmp_path: Path
) -> None:
    with serve(
        default_project, database_url, tmp_path / "server.log", LIMIT_CONCURRENCY="2"
    ) as served:
        base, port = served.url, served.port
        with socket.create_connection(("127.0.0.1", port)) as held:
            held.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            assert held.recv(4096).startswith(b"HTTP/1.1 200")
            started = time.perf_counter()
            refused = httpx.get(f"{base}/items/1")
            elapsed = time.perf_counter() - started
    assert refused.status_code == 503
    assert refused.headers["content-type"] == "application/problem+json"
    assert elapsed < 1.0  # shed at once, not queued


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.needs("wrk")
def test_bench_driver_runs_end_to_end(tmp_path: Path) -> None:
    """`make bench` in miniature: every app, a read and a write, one round of one second."""
    out = tmp_path / "out"
    # Not under pytest's own temporary tree: another pytest run resets its parent to mode 0700,
    # which the unprivileged PostgreSQL user then cannot traverse.
    workdir = Path(tempfile.mkdtemp(prefix="bench-smoke-"))
    # The limit guards against a hang, not for speed: 240 s ran out on a shared 2-core machine
    # (load average 11) before the run did.
    result = subprocess.run(
        [sys.executable, "-m", "bench.run", "--duration", "1", "--warmup", "0", "--rounds", "1",
         "--workloads", "by_id", "create", "--rows", "2000", "--out", str(out),
         "--workdir", str(workdir)],
        cwd=TEMPLATE, env={**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    shutil.rmtree(workdir, ignore_errors=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert set(results["runs"]) == {
        "generated",
        "generated_log_off",
        "ceiling",
        "fastapi_floor",
        "minimal",
        "baseline",
    }
    for per_app in results["summary"]["medians"].values():
        assert set(per_app) == {"by_id", "create"}
        assert all(cell["rps"] > 0 and cell["errors"] == 0 for cell in per_app.values())
        assert all(cell["cpu_us"] > 0 for cell in per_app.values())
    report = (out / "results.md").read_text()
    assert "generated/ceiling" in report
    assert "fastapi_floor/minimal by CPU" in report
    assert (out / "results.png").read_bytes().startswith(b"\x89PNG")
