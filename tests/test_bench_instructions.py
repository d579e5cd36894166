"""`make bench-instructions` in miniature: two apps under callgrind, real servers over TCP."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.baking import TEMPLATE, VENV_BIN


@pytest.mark.slow
@pytest.mark.needs("valgrind", "wrk")
def test_instructions_per_request_are_counted_for_each_app_and_workload(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "bench.instructions", "--apps", "ceiling", "generated",
         "--workloads", "by_id", "delete", "--duration", "2", "--warmup", "1", "--rows", "2000",
         "--out", str(out)],
        cwd=TEMPLATE, env={**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    apps = json.loads((out / "instructions.json").read_text())["apps"]
    for workload in ("by_id", "delete"):
        ceiling, generated = (apps[name][workload] for name in ("ceiling", "generated"))
        assert ceiling["requests"] > 0
        assert generated["requests"] > 0
        # Counted from the servers' own work: the framework and the service's layers cost more
        # than the raw ASGI app, request for request.
        assert generated["per_request"] > 1.5 * ceiling["per_request"] > 0
        # Counted since the counters were zeroed: the start-up's billions (imports, the pool) are
        # not in it, a request is well under a few million.
        assert generated["per_request"] < 3_000_000
    assert "| generated/ceiling |" in (out / "instructions.md").read_text()
