"""The load engine and the SLO capacity search calibrated against apps whose throughput
Little's law predicts: an async sleep, a sleep behind a fixed in-flight cap, a blocking handler.

The figures asserted are the laws', not a machine's: they hold on any machine that is not
overloaded, within the stated tolerance.
"""

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .baking import load_dev_module, run, tool_env
from .serving import serve_process

pytestmark = [pytest.mark.slow, pytest.mark.serial]

LITTLE_APP = """
import asyncio
import time

from fastapi import FastAPI

app = FastAPI()


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/sleep")
async def sleep() -> dict[str, str]:
    await asyncio.sleep(0.05)
    return {}


CAP = asyncio.Semaphore(20)


@app.get("/capped")
async def capped() -> dict[str, str]:
    async with CAP:  # at most 20 in flight, 50 ms each: 400 RPS by Little's law
        await asyncio.sleep(0.05)
    return {}


@app.get("/block")
def block() -> dict[str, str]:
    time.sleep(0.05)  # a sync handler: runs in anyio's thread pool of 40 threads
    return {}
"""


@pytest.fixture(scope="module")
def little_app(default_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("little")
    (folder / "little.py").write_text(LITTLE_APP)
    port = load_dev_module(default_project, "devdb").free_port()
    command = [sys.executable, "-m", "uvicorn", "little:app", "--app-dir", str(folder),
               "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log",
               "--log-level", "warning"]  # fmt: skip
    process = serve_process(command, folder, tool_env(default_project), port)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


def _probe(project: Path, url: str, path: str) -> dict[str, Any]:
    result = run(
        project, sys.executable, "-m", "loadtest", "probe", "--url", url, "--path", path,
        "--concurrency", "64", "--seconds", "3", timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    step: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return step


def test_engine_measures_littles_law_on_an_async_sleep(
    default_project: Path, little_app: str
) -> None:
    step = _probe(default_project, little_app, "/sleep")
    # 64 in flight, 50 ms each: at most 64 / 0.05 s = 1,280 RPS; the engine must come close.
    assert step["errors"] == 0
    assert step["p50_ms"] >= 50
    assert 0.85 * 1280 <= step["rps"] <= 1.01 * 1280, step
    # Little's law holds within the measurement: concurrency = throughput x latency.
    assert step["rps"] * step["p50_ms"] / 1000 == pytest.approx(64, rel=0.15)


def test_engine_sees_the_40_thread_ceiling_of_a_blocking_handler(
    default_project: Path, little_app: str
) -> None:
    step = _probe(default_project, little_app, "/block")
    # 40 threads, 50 ms each: at most 800 RPS however many requests wait; far more than one thread.
    assert step["errors"] == 0
    assert 0.5 * 800 < step["rps"] < 800, step


def test_rate_search_on_a_capped_sleep_finds_the_rate_littles_law_gives(
    default_project: Path, little_app: str
) -> None:
    """20 in flight at most, 50 ms each: 20 / 0.05 s = 400 RPS. Below it hardly anything waits;
    above it the queue grows for the whole trial and p99 leaves the 150 ms budget: the search must
    land there."""
    result = run(
        default_project, sys.executable, "-m", "loadtest", "search",
        "--url", little_app, "--path", "/capped", "--start-rps", "200", "--max-p99-ms", "150",
        "--seconds", "3", "--repeats", "2", timeout=400,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert 0.9 * 400 <= found["slo_rps"] <= 1.1 * 400, [
        (t["rate"], t["p99_ms"]) for t in found["trials"]
    ]
    assert all(step["errors"] == 0 for step in found["repeats"])
