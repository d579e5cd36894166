"""The chart of a jobs=postgres bake runs the worker in a Deployment of its own: its own 1-core
pods, the service's image, Secret and settings after the same migration Job (the webhook's Secret
as a file with secrets.asFiles), a PodDisruptionBudget, a NetworkPolicy, a grace period above the
longest job, its /metrics scraped like the service's, alerts on a growing backlog, on failed jobs
and on no worker up, and its connections in the chart's connection arithmetic. A bake without jobs
has none of it."""

import asyncio
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import helm_python
import promql_parser
import pytest
import yaml

from .baking import tool_env
from .charting import (
    DATABASE,
    EVERYTHING_ON,
    KUBERNETES_VERSIONS,
    STORED,
    chart_of,
    find,
    merge,
    pod_selectors,
    render,
    sdk_lint,
    selects,
    validate,
)
from .serving import fetch, migrated_database
from .test_chart_alerts import _selectors

# The receiver, and where it is for the NetworkPolicy (ignored while networkPolicy is off).
RECEIVER = [{"ipBlock": {"cidr": "203.0.113.0/24"}}]
WEBHOOK = {
    "worker": {
        "webhook": {"url": "https://hooks.example.com/shop", "existingSecret": "shop-webhook"}
    },
    "networkPolicy": {"webhook": {"to": RECEIVER}},
}
JOB_ALERTS = {"JobBacklogGrowing", "JobsFailing", "NoWorkerRunning"}
# Prometheus' own series: one per scrape target, 1 when its last scrape succeeded.
UP = "up"


def _worker(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return find(objects, "Deployment", component="worker")


def _service(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (service,) = [
        item
        for item in objects
        if item["kind"] == "Deployment"
        and "app.kubernetes.io/component" not in item["metadata"]["labels"]
    ]
    return service


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _policies(objects: list[dict[str, Any]]) -> dict[str | None, dict[str, Any]]:
    """The NetworkPolicies by their component label (None: the service's)."""
    return {
        item["metadata"]["labels"].get("app.kubernetes.io/component"): item
        for item in objects
        if item["kind"] == "NetworkPolicy"
    }


def _pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def _in_project(project: Path, script: str, env: dict[str, str] | None = None) -> Any:
    """The JSON `script` prints, run in a fresh process with the bake's package importable (its
    package name is the jobs bake's, which another bake of this session may have imported)."""
    tools = tool_env(project)
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": tools["PATH"], "PYTHONPATH": tools["PYTHONPATH"], **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_a_jobs_chart_lints_and_renders_valid_objects_with_and_without_every_option(
    jobs_project: Path,
) -> None:
    chart = chart_of(jobs_project)
    report = sdk_lint(chart)
    assert not report["Errors"], report["Messages"]
    everything = merge(EVERYTHING_ON, WEBHOOK)
    for values in (None, everything):
        assert helm_python.lint(chart, values, strict=True)["errors"] == []
        for item in render(chart, values):
            for version in KUBERNETES_VERSIONS:
                validate(item, version)


def test_the_worker_runs_in_its_own_one_core_pods_with_the_services_image_secret_and_migrations(
    jobs_project: Path,
) -> None:
    objects = render(chart_of(jobs_project), {"secrets": {"asFiles": False}})
    worker, service = _worker(objects), _service(objects)
    container = _container(worker)
    assert container["command"] == ["python", "-m", "inventory_service", "worker"]
    assert container["image"] == _container(service)["image"]
    one_core = {"cpu": "1", "memory": "1Gi"}
    assert container["resources"] == {"requests": one_core, "limits": one_core}
    assert worker["spec"]["replicas"] == 2
    env = {item["name"]: item for item in container["env"]}
    service_env = {item["name"]: item for item in _container(service)["env"]}
    assert env["DATABASE_URL"] == service_env["DATABASE_URL"]
    assert env["WEBHOOK_URL"] == service_env["WEBHOOK_URL"]  # the service enqueues, it delivers
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert (
        annotations["checksum/secret"]
        == (service["spec"]["template"]["metadata"]["annotations"]["checksum/secret"])
    )
    # The migration Job is a pre-install,pre-upgrade hook: it runs before any pod, the worker's too.
    job = find(objects, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert _container(job)["image"] == container["image"]
    assert "helm.sh/hook" not in worker["metadata"].get("annotations", {})
    # Its metrics port is probed: a blocked loop (which stops the heartbeats) restarts the pod.
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}


def test_the_worker_pods_are_selected_only_by_their_own_deployment_pdb_and_metrics_service(
    jobs_project: Path,
) -> None:
    objects = render(chart_of(jobs_project), merge(EVERYTHING_ON, WEBHOOK))
    worker_labels = _worker(objects)["spec"]["template"]["metadata"]["labels"]
    service_labels = _service(objects)["spec"]["template"]["metadata"]["labels"]
    worker_selectors = {
        where
        for where, selector in pod_selectors(objects).items()
        if selects(selector, worker_labels)
    }
    name = "shop-inventory-service"
    assert worker_selectors == {
        f"Deployment/{name}-worker selector",
        f"Deployment/{name}-worker topologySpread[0]",
        f"Deployment/{name}-worker topologySpread[1]",
        f"NetworkPolicy/{name}-worker podSelector",
        f"PodDisruptionBudget/{name}-worker selector",
        f"Service/{name}-worker-metrics selector",
    }
    for where, selector in pod_selectors(objects).items():
        if "worker" in where:
            assert not selects(selector, service_labels), where
    pdb = next(
        item
        for item in objects
        if item["kind"] == "PodDisruptionBudget" and item["metadata"]["name"].endswith("-worker")
    )
    assert pdb["spec"]["maxUnavailable"] == 1
    # The ServiceMonitor scrapes the worker's metrics Service as it scrapes the service's.
    monitor = find(objects, "ServiceMonitor")["spec"]["selector"]["matchLabels"]
    metrics = [
        item
        for item in objects
        if item["kind"] == "Service" and "metrics" in item["metadata"]["name"]
    ]
    assert {item["metadata"]["name"] for item in metrics} == {
        f"{name}-metrics",
        f"{name}-worker-metrics",
    }
    for service in metrics:
        assert selects(monitor, service["metadata"]["labels"])
    (port,) = _container(_worker(objects))["ports"]
    assert port["name"] == "metrics"


def test_the_worker_settings_the_chart_sets_are_valid_settings_of_the_service(
    jobs_project: Path,
) -> None:
    values = merge({"secrets": {"asFiles": False}, **DATABASE}, WEBHOOK)
    objects = render(chart_of(jobs_project), values)
    secrets = {"shop-webhook": {"WEBHOOK_SECRET": "s3cret"}, **STORED}
    secrets |= {
        item["metadata"]["name"]: item["stringData"] for item in objects if item["kind"] == "Secret"
    }
    for deployment in (_worker(objects), _service(objects)):
        env = {}
        for variable in _container(deployment)["env"]:
            reference = variable.get("valueFrom", {}).get("secretKeyRef")
            env[variable["name"]] = (
                secrets[reference["name"]][reference["key"]] if reference else variable["value"]
            )
        settings = _in_project(
            jobs_project,
            "from inventory_service.settings import Settings; print(Settings().model_dump_json())",
            env,
        )
        assert {name.lower() for name in env} <= settings.keys()
        assert settings["webhook_url"] == "https://hooks.example.com/shop"
        assert settings["jobs_heartbeat_timeout_seconds"] == 30


def test_the_worker_grace_period_and_heartbeat_outlast_the_longest_job(jobs_project: Path) -> None:
    chart = chart_of(jobs_project)
    values = yaml.safe_load((chart / "values.yaml").read_text())["worker"]
    pod = _worker(render(chart))["spec"]["template"]["spec"]
    longest = values["webhook"]["timeoutSeconds"]
    assert pod["terminationGracePeriodSeconds"] > longest + 10
    with pytest.raises(helm_python.HelmRenderError, match=r"worker\.terminationGracePeriodSeconds"):
        render(chart, {"worker": {"terminationGracePeriodSeconds": longest + 10}})
    with pytest.raises(helm_python.HelmRenderError, match=r"worker\.heartbeatTimeoutSeconds"):
        render(chart, {"worker": {"heartbeatTimeoutSeconds": longest}})
    with pytest.raises(helm_python.HelmRenderError, match="existingSecret"):
        render(chart, {"worker": {"webhook": {"url": "https://hooks.example.com/shop"}}})


def test_the_worker_connections_count_in_the_connection_arithmetic(jobs_project: Path) -> None:
    """(8 + 1) x (8 + 1) for the service's pods (pool and readiness probe), 1 for the migration,
    90 allowed: 7 workers (8 with the surge) fit exactly, 8 do not; without the worker the same
    chart has room for them."""
    chart = chart_of(jobs_project)
    assert _worker(render(chart, {"worker": {"replicaCount": 7}}))
    with pytest.raises(
        helm_python.HelmRenderError,
        match=r"need 91 connections .* \+ 9 of worker pods incl\. surge \+ 1 migration",
    ):
        render(chart, {"worker": {"replicaCount": 8}})
    off = render(chart, {"worker": {"replicaCount": 8, "enabled": False}})
    assert [item for item in off if "worker" in item["metadata"]["name"]] == []


def test_the_job_alerts_are_valid_promql_on_series_the_worker_exports(jobs_project: Path) -> None:
    exported = _in_project(
        jobs_project,
        "import json; from inventory_service.worker.metrics import JobMetrics\n"
        "suffixes = {'counter': ['_total'], 'histogram': ['_bucket', '_sum', '_count']}\n"
        "print(json.dumps([f.name + s for f in JobMetrics().registry.collect()"
        " for s in suffixes.get(f.type, [''])]))",
    )
    objects = render(chart_of(jobs_project), EVERYTHING_ON)
    (group,) = find(objects, "PrometheusRule")["spec"]["groups"]
    rules = {rule["alert"]: rule for rule in group["rules"] if rule["alert"] in JOB_ALERTS}
    assert rules.keys() == JOB_ALERTS
    for alert, rule in rules.items():
        assert len(rule["annotations"]["runbook"]) > 40
        names = set()
        for selector in _selectors(promql_parser.parse(rule["expr"])):
            labels = {matcher.name: matcher.value for matcher in selector.matchers.matchers}
            assert labels["job"] == "shop-inventory-service-worker-metrics", alert
            names.add(selector.name)
        assert names <= {*exported, UP}, alert
    assert "jobs_in_queue" in rules["JobBacklogGrowing"]["expr"]
    assert rules["JobBacklogGrowing"]["for"] == "10m"
    assert "jobs_failed_total" in rules["JobsFailing"]["expr"]


def _statuses_read(expression: str) -> set[tuple[str, str]]:
    """The `status` matchers (operator, value) of every jobs_in_queue selector of `expression`."""
    return {
        (str(matcher.op), matcher.value)
        for selector in _selectors(promql_parser.parse(expression))
        if selector.name == "jobs_in_queue"
        for matcher in selector.matchers.matchers
        if matcher.name == "status"
    }


def test_the_hpa_the_adapter_rule_and_the_backlog_alert_read_the_jobs_due_now(
    jobs_project: Path,
) -> None:
    """jobs_in_queue{status="queued"} is what a worker could take now; the deliveries waiting
    out their retry backoff are status="scheduled" (the bake's tests/worker/test_queue_depth.py).
    The backlog alert, the prometheus-adapter rule of docs/jobs.md and the HPA it feeds read the
    first and only it."""
    statuses = _in_project(
        jobs_project,
        "import json; from inventory_service.worker.metrics import STATUSES;"
        " print(json.dumps(STATUSES))",
    )
    assert {"queued", "scheduled"} <= set(statuses)
    due = {(str(promql_parser.MatchOp.Equal), "queued")}
    scaled = {"worker": {"autoscaling": {"enabled": True}}}
    objects = render(chart_of(jobs_project), merge(EVERYTHING_ON, scaled))
    (group,) = find(objects, "PrometheusRule")["spec"]["groups"]
    (backlog,) = [rule for rule in group["rules"] if rule["alert"] == "JobBacklogGrowing"]
    assert _statuses_read(backlog["expr"]) == due
    guide = (jobs_project / "docs" / "jobs.md").read_text()
    (adapter,) = [
        yaml.safe_load(block)
        for block in re.findall(r"```yaml\n(.*?)```", guide, re.DOTALL)
        if "externalRules" in block
    ]
    (rule,) = adapter["externalRules"]
    assert _statuses_read(rule["seriesQuery"]) == due
    matchers = 'namespace="default"'  # what the adapter puts for <<.LabelMatchers>>
    assert _statuses_read(rule["metricsQuery"].replace("<<.LabelMatchers>>", matchers)) == due
    (hpa,) = [
        item
        for item in objects
        if item["kind"] == "HorizontalPodAutoscaler"
        and item["metadata"]["name"].endswith("-worker")
    ]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["external"]["metric"]["name"] == rule["name"]["as"]


def test_the_worker_pods_get_a_network_policy_scrapes_in_and_database_dns_and_receiver_out(
    jobs_project: Path,
) -> None:
    chart = chart_of(jobs_project)
    assert "NetworkPolicy" not in {item["kind"] for item in render(chart, WEBHOOK)}
    objects = render(chart, merge(EVERYTHING_ON, WEBHOOK))
    policies = _policies(objects)
    assert policies.keys() == {None, "migrations", "worker"}
    policy = policies["worker"]["spec"]
    worker_labels = _pod_labels(_worker(objects))
    assert selects(policy["podSelector"]["matchLabels"], worker_labels)
    assert not selects(policy["podSelector"]["matchLabels"], _pod_labels(_service(objects)))
    assert not selects(policies[None]["spec"]["podSelector"]["matchLabels"], worker_labels)
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    # Nothing but Prometheus reaches a worker, on the port its container names `metrics`.
    assert policy["ingress"] == [
        {
            "from": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    }
                }
            ],
            "ports": [{"port": "metrics", "protocol": "TCP"}],
        }
    ]
    assert [port["name"] for port in _container(_worker(objects))["ports"]] == ["metrics"]
    # Out: the database and DNS as the service's pods, then the receiver on the URL's port.
    assert policy["egress"][:2] == policies[None]["spec"]["egress"]
    assert policy["egress"][2:] == [{"to": RECEIVER, "ports": [{"port": 443, "protocol": "TCP"}]}]
    for url, port in (
        ("http://hooks.example.com/shop", 80),
        ("https://hooks.example.com:8443/shop", 8443),
        ("http://[fd00::1]:8080/shop", 8080),
    ):
        values = merge(merge(EVERYTHING_ON, WEBHOOK), {"worker": {"webhook": {"url": url}}})
        egress = _policies(render(chart, values))["worker"]["spec"]["egress"]
        assert egress[2:] == [{"to": RECEIVER, "ports": [{"port": port, "protocol": "TCP"}]}], url
    # Without a URL nothing is delivered: the database and DNS only.
    without = _policies(render(chart, EVERYTHING_ON))["worker"]["spec"]["egress"]
    assert without == policies[None]["spec"]["egress"]
    # An empty `to` would let the pods out to anywhere on that port: refused.
    unplaced = merge(EVERYTHING_ON, {"worker": WEBHOOK["worker"]})
    with pytest.raises(helm_python.HelmRenderError, match=r"networkPolicy\.webhook\.to"):
        render(chart, unplaced)


def test_with_secrets_as_files_the_webhook_secret_reaches_both_pods_as_a_file_not_a_variable(
    jobs_project: Path, tmp_path: Path
) -> None:
    chart = chart_of(jobs_project)
    webhook = merge(WEBHOOK, {"worker": {"webhook": {"existingSecretKey": "signing-key"}}})
    values = merge({"database": {"existingSecret": "prod-db", "existingSecretKey": "url"}}, webhook)
    as_variables = render(chart, merge(values, {"secrets": {"asFiles": False}}))
    for deployment in (_worker(as_variables), _service(as_variables)):
        env = {item["name"]: item for item in _container(deployment)["env"]}
        reference = {"name": "shop-webhook", "key": "signing-key"}
        assert env["WEBHOOK_SECRET"]["valueFrom"]["secretKeyRef"] == reference
        assert "secrets" not in [
            volume["name"] for volume in deployment["spec"]["template"]["spec"]["volumes"]
        ]
    as_files = render(chart, merge(values, {"secrets": {"asFiles": True}}))
    stored = {"prod-db": {"url": "postgresql://a:pw@db/app"}, "shop-webhook": {"signing-key": "s3"}}
    for deployment in (_worker(as_files), _service(as_files)):
        pod = deployment["spec"]["template"]["spec"]
        container = _container(deployment)
        names = [item["name"] for item in container["env"]]
        assert "WEBHOOK_SECRET" not in names
        assert "DATABASE_URL" not in names
        (mount,) = [item for item in container["volumeMounts"] if item["name"] == "secrets"]
        assert mount == {"name": "secrets", "mountPath": "/run/secrets", "readOnly": True}
        (volume,) = [item for item in pod["volumes"] if item["name"] == "secrets"]
        assert [source["secret"] for source in volume["projected"]["sources"]] == [
            {"name": "prod-db", "items": [{"key": "url", "path": "DATABASE_URL"}]},
            {"name": "shop-webhook", "items": [{"key": "signing-key", "path": "WEBHOOK_SECRET"}]},
        ]
        validate(deployment)
        # What the pod sees in /run/secrets: the settings read the webhook's key from its file.
        folder = tmp_path / deployment["metadata"]["name"]
        folder.mkdir()
        for source in volume["projected"]["sources"]:
            for item in source["secret"]["items"]:
                (folder / item["path"]).write_text(stored[source["secret"]["name"]][item["key"]])
        env = {item["name"]: item["value"] for item in container["env"]}
        secret = _in_project(
            jobs_project,
            "import json; from inventory_service.settings import Settings; s = Settings()\n"
            "print(json.dumps(s.webhook_secret.get_secret_value()))",
            {**env, "SECRETS_DIR": str(folder)},
        )
        assert secret == "s3"


def test_an_alert_fires_when_no_worker_pod_of_the_worker_scrape_job_is_up(
    jobs_project: Path,
) -> None:
    """The job label of a ServiceMonitor's series is the name of the Service it scraped: the
    alert names the Service that the ServiceMonitor selects and that selects the worker's pods."""
    objects = render(chart_of(jobs_project), EVERYTHING_ON)
    monitor = find(objects, "ServiceMonitor")["spec"]["selector"]["matchLabels"]
    worker_labels = _pod_labels(_worker(objects))
    (job,) = [
        item["metadata"]["name"]
        for item in objects
        if item["kind"] == "Service"
        and selects(monitor, item["metadata"]["labels"])
        and selects(item["spec"]["selector"], worker_labels)
    ]
    (group,) = find(objects, "PrometheusRule")["spec"]["groups"]
    (rule,) = [rule for rule in group["rules"] if rule["alert"] == "NoWorkerRunning"]
    expression = promql_parser.parse(rule["expr"])
    assert isinstance(expression, promql_parser.Call)
    # absent(up{...} == 1): a filter (no `bool`), so a pod scraped but down counts as none.
    assert expression.func.name == "absent"
    (up,) = expression.args
    assert (str(up.op), up.rhs.val, up.modifier) == ("==", 1.0, None)
    assert up.lhs.name == UP
    labels = {matcher.name: matcher.value for matcher in up.lhs.matchers.matchers}
    assert labels == {"namespace": "default", "job": job}
    assert rule["for"] == "5m"
    assert rule["labels"]["severity"] == "critical"
    assert "worker" in rule["annotations"]["runbook"]


def _restart_alert_watches(objects: list[dict[str, Any]]) -> set[str]:
    """The Deployments whose pods' container PodRestarting matches: its pod and container
    matchers (PromQL regular expressions, anchored) against each Deployment's pods, named after
    it with a suffix, and its container."""
    (group,) = find(objects, "PrometheusRule")["spec"]["groups"]
    (rule,) = [rule for rule in group["rules"] if rule["alert"] == "PodRestarting"]
    (selector,) = _selectors(promql_parser.parse(rule["expr"]))
    matchers = {matcher.name: matcher.value for matcher in selector.matchers.matchers}
    return {
        item["metadata"]["name"]
        for item in objects
        if item["kind"] == "Deployment"
        and re.fullmatch(matchers["pod"], f"{item['metadata']['name']}-5d9c7f8b6-x2k4q")
        and re.fullmatch(matchers["container"], _container(item)["name"])
    }


def test_the_restart_alert_watches_the_worker_pods_as_it_does_the_services(
    jobs_project: Path, chart: Path
) -> None:
    objects = render(chart_of(jobs_project), merge(EVERYTHING_ON, WEBHOOK))
    assert _restart_alert_watches(objects) == {
        _service(objects)["metadata"]["name"],
        _worker(objects)["metadata"]["name"],
    }
    without_jobs = render(chart, EVERYTHING_ON)
    assert _restart_alert_watches(without_jobs) == {_service(without_jobs)["metadata"]["name"]}


def test_a_chart_without_jobs_has_no_worker_objects_values_or_alerts(chart: Path) -> None:
    objects = render(chart, EVERYTHING_ON)
    assert [
        item["metadata"]["name"] for item in objects if "worker" in item["metadata"]["name"]
    ] == []
    (group,) = find(objects, "PrometheusRule")["spec"]["groups"]
    assert not {rule["alert"] for rule in group["rules"]} & JOB_ALERTS
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert "worker" not in values
    assert "webhook" not in values["networkPolicy"]
    assert [item["metadata"]["name"] for item in objects if item["kind"] == "NetworkPolicy"] == [
        "shop-inventory-service",
        "shop-inventory-service-migrate",
    ]
    assert not (chart / "templates" / "worker-deployment.yaml").exists()
    with pytest.raises(helm_python.HelmError, match="worker"):
        render(chart, {"worker": {"enabled": True}})


def test_a_changed_webhook_secret_rolls_the_service_and_worker_pods(jobs_project: Path) -> None:
    """The pod templates carry a checksum of the live webhook Secret (Helm's lookup), as they do
    of the database's: a new key reaches the pods by the next `helm upgrade`."""
    chart = chart_of(jobs_project)
    for deployment in (_worker(render(chart, WEBHOOK)), _service(render(chart, WEBHOOK))):
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert "checksum/webhook" in annotations, deployment["metadata"]["name"]
    for deployment in (_worker(render(chart, {})), _service(render(chart, {}))):
        assert "checksum/webhook" not in deployment["spec"]["template"]["metadata"]["annotations"]


def _pod_command(
    project: Path, command: str, env: dict[str, str], folder: Path
) -> subprocess.CompletedProcess[str]:
    """`command` as the worker's container runs it: its variables, its Secret's files in
    SECRETS_DIR (/run/secrets in the pod), outside the project's folder."""
    tools = tool_env(project)
    return subprocess.run(
        shlex.split(command),
        cwd=folder,
        env={"PATH": tools["PATH"], "PYTHONPATH": tools["PYTHONPATH"], **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_failing_jobs_runbook_lists_and_requeues_a_failed_job_from_a_worker_pod(
    jobs_project: Path, postgres_url: str, tmp_path: Path
) -> None:
    """The runbook's two commands as a person pastes them: `kubectl exec` into the worker
    Deployment the chart renders, and what follows `--` run as that container would run it (its
    variables, DATABASE_URL in its Secret's file, no PGDSN) on a real PostgreSQL: the failed job
    is listed, then queued again."""
    objects = render(chart_of(jobs_project), EVERYTHING_ON)
    (group,) = find(objects, "PrometheusRule")["spec"]["groups"]
    (rule,) = [rule for rule in group["rules"] if rule["alert"] == "JobsFailing"]
    listed, requeued = re.findall(r"`(kubectl exec [^`]+)`", rule["annotations"]["runbook"])
    worker = _worker(objects)
    in_pod = []
    for command in (listed, requeued):
        kubectl, _, rest = command.partition(" -- ")
        assert shlex.split(kubectl) == [
            "kubectl",
            "exec",
            "-n",
            "default",
            f"deploy/{worker['metadata']['name']}",
        ]
        in_pod.append(rest)
    assert "<id>" in in_pod[1]
    container = _container(worker)
    env = {item["name"]: item["value"] for item in container["env"] if "value" in item}
    assert "DATABASE_URL" not in env  # secrets.asFiles: a file of the Secret's, not a variable
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    with migrated_database(jobs_project, postgres_url, "runbook_requeue") as url:
        (secrets / "DATABASE_URL").write_text(url)
        env["SECRETS_DIR"] = str(secrets)
        (job_id,) = asyncio.run(
            fetch(
                url,
                "INSERT INTO pgqueuer (priority, entrypoint, payload, status, attempts)"
                " VALUES (0, 'webhook', NULL, 'failed', 8) RETURNING id",
            )
        )[0]
        shown = _pod_command(jobs_project, in_pod[0], env, tmp_path)
        done = _pod_command(jobs_project, in_pod[1].replace("<id>", str(job_id)), env, tmp_path)
        (status,) = asyncio.run(fetch(url, "SELECT status::text FROM pgqueuer"))[0]
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert re.search(rf"^\s*{job_id}\s+webhook\s+8\b", shown.stdout, re.M), shown.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    assert status == "queued"
