"""The k6 config: the requests of each scenario from the scenario table, the ids from Python; the
headers every request carries reach k6 (and a cluster's runners) in the environment, not in a file."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from loadtest import project
from loadtest.drive import k6
from loadtest.drive.k6 import IDS, config, scenario_name
from loadtest.plan.budget import load
from loadtest.plan.declared import plural
from loadtest.plan.operations import UNIQUE_RANGE, keyed, parts
from loadtest.plan.scenarios import OPERATIONS, SCENARIOS

from ...declared import first_resource

FIRST = plural(first_resource())

SECRET = "s3cret-value-of-the-test"


def test_the_k6_config_carries_each_scenarios_operations_and_weights_from_the_table() -> None:
    budget = load(project.BUDGET)
    ids = {
        resource: [3, 5]
        for resource in {op.resource for mix in SCENARIOS.values() for op, _ in mix} - {""}
    }
    settings = config(budget, url="http://x/", ids=ids, names=list(SCENARIOS), seconds=10.0)
    assert settings["base_url"] == "http://x"
    assert settings["ids"] == ids
    assert settings["unique_range"] == list(UNIQUE_RANGE)
    for name, mix in SCENARIOS.items():
        expected = [{"operation": op.name, "weight": weight} for op, weight in mix]
        # k6 takes no dot in a scenario's name: `items.by_id` is `items-by_id`.
        assert settings["mixes"][scenario_name(name)] == expected
        # Every scenario runs the script's one (default) function, which reads its mix by name.
        assert "exec" not in settings["options"]["scenarios"][scenario_name(name)]
        for operation, _ in mix:
            assert settings["operations"][operation.name] == {
                "method": operation.method,
                "path": parts(operation.path),
                "body": parts(operation.body) if operation.body is not None else None,
                "status": operation.status,
                "route": operation.route,
                "resource": operation.resource,
                "headers": [],  # a create sends an Idempotency-Key with --idempotency-keys alone
            }


def test_the_k6_config_gives_a_keyed_create_its_idempotency_key_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = f"{FIRST}.create"
    monkeypatch.setitem(SCENARIOS, name, ((keyed(OPERATIONS[name]), 1),))
    settings = config(load(project.BUDGET), url="http://x", ids={}, names=[name], seconds=1.0)
    # crud.js renders each template per request, as it renders a body: a fresh key each time.
    assert settings["operations"][name]["headers"] == [
        ["Idempotency-Key", ["loadtest-", "u", "", "u", ""]]
    ]


def test_the_k6_config_holds_only_the_chosen_scenarios_and_at_most_IDS_ids() -> None:
    budget = load(project.BUDGET)
    ids = list(range(1, IDS + 100))
    names = [f"{FIRST}.by_id"]
    settings = config(
        budget, url="http://x", ids={FIRST: ids, "other": [1]}, names=names, seconds=10.0
    )
    assert list(settings["operations"]) == [f"{FIRST}.by_id"]
    assert list(settings["mixes"]) == [scenario_name(f"{FIRST}.by_id")]
    assert settings["ids"] == {FIRST: ids[:IDS]}


class _Recorder(BaseHTTPRequestHandler):
    """Records each request's method and headers (names in lower case); answers POST 201 and
    anything else 200."""

    protocol_version = "HTTP/1.1"  # keep-alive, as k6 expects
    seen: list[tuple[str, dict[str, str]]]

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    seen: list[tuple[str, dict[str, str]]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()
    thread.join()


def test_k6_sends_the_headers_on_every_request_and_writes_none_of_them(
    recorder: tuple[str, list[tuple[str, dict[str, str]]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, seen = recorder
    budget = load(project.BUDGET)
    names = [f"{FIRST}.by_id", f"{FIRST}.create"]
    # The create as a scenario, also where a unique field leaves it out of the table (the
    # recorder answers every request alike).
    monkeypatch.setitem(SCENARIOS, names[1], ((OPERATIONS[names[1]], 1),))
    settings = config(
        budget, url=url, ids={FIRST: [1, 2]}, names=names, seconds=0.5, rate_scale=0.02
    )
    # The latency thresholds are the budget's; on a busy machine the recorder can miss them
    # (k6 then exits THRESHOLD_FAILED): what is judged here is what was sent.
    assert k6.run(settings, tmp_path, {"X-API-Key": SECRET}) in (0, k6.THRESHOLD_FAILED)
    assert {method for method, _ in seen} == {"GET", "POST"}
    for method, headers in seen:
        assert headers.get("x-api-key") == SECRET, (method, headers)
    posted = [headers for method, headers in seen if method == "POST"]
    assert all(headers["content-type"] == "application/json" for headers in posted)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["k6-config.json", "k6-summary.json"]
    for path in tmp_path.iterdir():
        assert SECRET not in path.read_text(), path.name
