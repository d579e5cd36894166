"""What the chart adds around the pod: labels no selector confuses, the Secret checksum, the image
digest, the metrics port, the NetworkPolicy and the `helm test` hook (alerts:
test_chart_alerts.py)."""

import hashlib
from pathlib import Path
from typing import Any

import helm_python
import pytest

from .baking import bake, load_dev_module
from .charting import (
    DATABASE,
    DIGEST,
    EVERYTHING_ON,
    RELEASE,
    chart_of,
    find,
    merge,
    pod_selectors,
    render,
    run_helm_test,
    selects,
    service_settings,
)
from .serving import migrated_database, start_service


def _pod_labels(item: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = item["spec"].get("template", item)["metadata"]["labels"]
    return labels


def test_migration_and_test_pods_are_matched_by_no_selector_of_the_service(chart: Path) -> None:
    """Overlapping selectors would count the Job's pod as a replica (Deployment, PDB, HPA,
    spread)."""
    objects = render(chart, EVERYTHING_ON)
    selectors = pod_selectors(objects)
    # Deployment, 2 Services, PDB, spread over nodes and zones, 2 NetworkPolicies
    assert len(selectors) == 8, selectors
    service_pod = _pod_labels(find(objects, "Deployment"))
    job_pod = _pod_labels(find(objects, "Job"))
    test_pod = _pod_labels(find(objects, "Pod"))
    migrate_policy = f"NetworkPolicy/{RELEASE}-inventory-service-migrate podSelector"
    for where, selector in selectors.items():
        assert selects(selector, service_pod) == (where != migrate_policy), where
        assert selects(selector, job_pod) == (where == migrate_policy), where
        assert not selects(selector, test_pod), where
    assert job_pod["app.kubernetes.io/component"] == "migrations"
    hpa = find(objects, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]
    assert hpa["name"] == find(objects, "Deployment")["metadata"]["name"]


def test_the_pod_template_carries_the_database_secret_s_checksum_and_the_chart_takes_no_url(
    chart: Path,
) -> None:
    """The database Secret is the user's, read live by `lookup` at upgrade time (a rotated one
    rolls the pods); without a cluster it hashes "". A URL as a value, which Helm would keep in
    every revision of the release history, is refused."""

    def checksum(values: dict[str, Any]) -> str:
        annotations = find(render(chart, values), "Deployment")["spec"]["template"]["metadata"][
            "annotations"
        ]
        value: str = annotations["checksum/secret"]
        return value

    assert checksum({"database": {"existingSecret": "prod-db"}}) == hashlib.sha256(b"").hexdigest()
    assert [item for item in render(chart) if item["kind"] == "Secret"] == []
    with pytest.raises(helm_python.HelmError, match="url"):
        render(chart, {"database": {"url": "postgresql://app:pw@db:5432/app"}})
    custom = find(render(chart, {"podAnnotations": {"team": "shop"}}), "Deployment")
    assert custom["spec"]["template"]["metadata"]["annotations"].keys() == {
        "checksum/secret",
        "team",
    }


def test_the_rate_limit_is_off_by_default_and_its_values_reach_the_service(
    chart: Path, default_project: Path
) -> None:
    database = DATABASE
    settings = service_settings(default_project, render(chart, database))
    assert settings["rate_limit_rps"] == 0  # off: the limit is per pod, and needs the proxy named
    limited = merge(database, {"server": {"rateLimit": {"rps": 2.5, "burst": 7, "clients": 10}}})
    settings = service_settings(default_project, render(chart, limited))
    assert (settings["rate_limit_rps"], settings["rate_limit_burst"]) == (2.5, 7)
    assert settings["rate_limit_clients"] == 10
    for wrong in ({"rps": -1}, {"burst": 0}, {"clients": 0}):
        with pytest.raises(helm_python.HelmError, match="/server/rateLimit"):
            render(chart, merge(limited, {"server": {"rateLimit": wrong}}))


def test_image_digest_pins_every_pod_of_the_release(chart: Path) -> None:
    objects = render(chart, {"image": {"digest": DIGEST, "tag": "1.2.3"}})
    images = [
        container["image"]
        for item in objects
        if item["kind"] in {"Deployment", "Job", "Pod"}
        for container in (
            item["spec"]["template"]["spec"] if "template" in item["spec"] else item["spec"]
        )["containers"]
    ]
    assert images == [f"inventory-service:1.2.3@{DIGEST}"] * 3
    assert find(render(chart), "Deployment")["spec"]["template"]["spec"]["containers"][0][
        "image"
    ] == ("inventory-service:0.1.0")
    with pytest.raises(helm_python.HelmError, match="/image/digest"):
        render(chart, {"image": {"digest": "latest"}})


def test_metrics_port_is_reachable_through_the_metrics_service_only(chart: Path) -> None:
    objects = render(chart, EVERYTHING_ON)
    (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {port["name"]: port["containerPort"] for port in container["ports"]} == {
        "http": 8000,
        "metrics": 9090,
    }
    assert {"name": "METRICS_PORT", "value": "9090"} in container["env"]
    traffic, metrics = _services(objects)
    assert [port["targetPort"] for port in traffic["spec"]["ports"]] == ["http"]
    assert [port["targetPort"] for port in metrics["spec"]["ports"]] == ["metrics"]
    backends = [
        path["backend"]["service"]
        for rule in find(objects, "Ingress")["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    assert backends == [{"name": traffic["metadata"]["name"], "port": {"name": "http"}}]
    monitor = find(objects, "ServiceMonitor")
    assert selects(monitor["spec"]["selector"]["matchLabels"], metrics["metadata"]["labels"])
    assert not selects(monitor["spec"]["selector"]["matchLabels"], traffic["metadata"]["labels"])
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint == {**endpoint, "port": "metrics", "path": "/metrics"}
    assert "Service" not in {
        item["kind"] for item in render(chart) if item["metadata"]["name"].endswith("-metrics")
    }
    with pytest.raises(
        helm_python.HelmError, match=r"metrics.port \(8000\) must differ from server.port"
    ):
        render(chart, {"metrics": {"port": 8000}})


def _services(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    services = {
        item["metadata"]["labels"].get("app.kubernetes.io/component"): item
        for item in objects
        if item["kind"] == "Service"
    }
    return services[None], services["metrics"]


def test_network_policy_lets_in_ingress_monitoring_and_helpers_and_out_only_the_database_and_dns(
    chart: Path,
) -> None:
    assert "NetworkPolicy" not in {item["kind"] for item in render(chart)}
    objects = render(chart, EVERYTHING_ON)
    service, migrate = (item for item in objects if item["kind"] == "NetworkPolicy")
    ingress_from, monitoring_from = service["spec"]["ingress"]
    assert ingress_from["ports"] == [{"port": "http", "protocol": "TCP"}]
    namespaces, helpers = ingress_from["from"]
    assert namespaces == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}
    }
    assert selects(helpers["podSelector"]["matchLabels"], _pod_labels(find(objects, "Pod")))
    assert monitoring_from == {
        "from": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ],
        "ports": [{"port": "metrics", "protocol": "TCP"}],
    }
    for policy in (service, migrate):
        database, dns = policy["spec"]["egress"]
        assert database == {
            "to": [{"ipBlock": {"cidr": "10.0.12.0/24"}}],
            "ports": [{"port": 5432, "protocol": "TCP"}],
        }
        assert {port["port"] for port in dns["ports"]} == {53}
        assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert "ingress" not in migrate["spec"]
    assert migrate["spec"]["policyTypes"] == [
        "Ingress",
        "Egress",
    ]
    # Created before the migration Job (hook weight 0), which needs the database.
    assert int(migrate["metadata"]["annotations"]["helm.sh/hook-weight"]) < 0
    with pytest.raises(helm_python.HelmError, match="/networkPolicy/database/to"):
        render(chart, {"networkPolicy": {"enabled": True}})


def test_helm_test_hook_runs_the_round_trip_script_against_the_service(chart: Path) -> None:
    objects = render(chart, EVERYTHING_ON)
    pod, service = find(objects, "Pod"), _services(objects)[0]
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (container,) = pod["spec"]["containers"]
    assert container["command"] == ["python", "-c", (chart / "files" / "helm_test.py").read_text()]
    port = service["spec"]["ports"][0]["port"]
    assert container["env"] == [
        {"name": "BASE_URL", "value": f"http://{service['metadata']['name']}:{port}"}
    ]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


def test_helm_test_script_passes_on_a_served_service_and_fails_without_one(
    default_project: Path, chart: Path, postgres_url: str, tmp_path: Path
) -> None:
    with migrated_database(default_project, postgres_url, "helm_test") as url:
        served = start_service(default_project, url, tmp_path / "service.log")
        try:
            passed = run_helm_test(chart, served.url)
        finally:
            served.process.terminate()
            served.process.wait(timeout=30)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    steps = [line.split(":")[0] for line in passed.stdout.splitlines()]
    assert steps[0] == "ok   GET /readyz", steps
    assert steps[-1].endswith(" after DELETE"), steps
    assert len(steps) == 5
    port = load_dev_module(default_project, "devdb").free_port()
    failed = run_helm_test(chart, f"http://127.0.0.1:{port}")
    assert failed.returncode == 1
    assert failed.stdout.startswith("FAIL"), failed.stdout + failed.stderr


# The first resource of issue 42's bake: an enum (whose declared example is None), a unique text,
# a sort and an optional filtered date.
ENUM_FIRST = (
    "sku:str(32):unique total:money:sort kind:enum(retail|wholesale)=retail:filter due:date?:filter"
)


def test_helm_test_script_creates_a_row_of_a_first_resource_with_an_enum_field(
    tmp_path: Path, postgres_url: str
) -> None:
    project = bake(tmp_path, resource="order", resource_plural="orders", fields=ENUM_FIRST)
    with migrated_database(project, postgres_url, "helm_test_enum") as url:
        served = start_service(project, url, tmp_path / "service.log")
        try:
            result = run_helm_test(chart_of(project), served.url)
        finally:
            served.process.terminate()
            served.process.wait(timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   POST /orders: 201" in result.stdout
