"""The chart's probes, disruption budget and spread, rendered by Helm's own engine: the kubelet
probes the metrics port (out of the traffic port's connection cap), a drain is never refused for
unready pods, and replicas spread over nodes and zones per ReplicaSet."""

from pathlib import Path
from typing import Any

import helm_python
import pytest

from .charting import chart_of, find, merge, render, validate

PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_the_kubelet_probes_the_metrics_port_not_the_traffic_port(chart: Path) -> None:
    container = _container(render(chart, {"metrics": {"port": 9300}}))
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports["metrics"] == 9300
    assert {probe: container[probe]["httpGet"]["port"] for probe in PROBES} == dict.fromkeys(
        PROBES, "metrics"
    )
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_connection_budget_counts_each_pods_readiness_connection(chart: Path) -> None:
    """(8 + 1) pods x (8 pooled + 1 probe) + 1 migration = 82: they fit in 92 - 10, not 91 - 10."""
    assert render(chart, {"database": {"maxConnections": 92, "reservedConnections": 10}})
    with pytest.raises(helm_python.HelmError, match="need 82 connections"):
        render(chart, {"database": {"maxConnections": 91, "reservedConnections": 10}})


def test_disruption_budgets_let_a_drain_evict_pods_that_are_not_ready(
    chart: Path, jobs_project: Path
) -> None:
    budgets = [item for item in render(chart) if item["kind"] == "PodDisruptionBudget"]
    jobs = [
        item for item in render(chart_of(jobs_project)) if item["kind"] == "PodDisruptionBudget"
    ]
    assert len(budgets) == 1
    assert len(jobs) == 2  # the service's and the worker's
    for budget in budgets + jobs:
        assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_replicas_spread_over_nodes_and_zones_within_their_replica_set(
    chart: Path, jobs_project: Path
) -> None:
    objects = render(chart) + render(chart_of(jobs_project))
    for deployment in [item for item in objects if item["kind"] == "Deployment"]:
        pod = deployment["spec"]["template"]["spec"]
        constraints = pod["topologySpreadConstraints"]
        assert [item["topologyKey"] for item in constraints] == [
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
        ]
        selector = deployment["spec"]["selector"]["matchLabels"]
        for constraint in constraints:
            assert constraint["matchLabelKeys"] == ["pod-template-hash"]
            assert constraint["labelSelector"]["matchLabels"] == selector
            assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
    off = find(render(chart, {"topologySpread": {"enabled": False}}), "Deployment")
    assert "topologySpreadConstraints" not in off["spec"]["template"]["spec"]
    strict = find(
        render(chart, {"topologySpread": {"whenUnsatisfiable": "DoNotSchedule"}}), "Deployment"
    )
    assert {
        item["whenUnsatisfiable"]
        for item in strict["spec"]["template"]["spec"]["topologySpreadConstraints"]
    } == {"DoNotSchedule"}


def _worker(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return find(objects, "Deployment", component="worker")


def test_a_worker_is_ready_only_while_taking_jobs_and_must_stay_so_before_a_rollout_goes_on(
    jobs_project: Path,
) -> None:
    worker = _worker(render(chart_of(jobs_project)))
    (container,) = worker["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert worker["spec"]["minReadySeconds"] == 10
    assert worker["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_a_worker_stalled_on_its_connection_fails_liveness_after_the_stall_bound(
    jobs_project: Path,
) -> None:
    """/healthz fails once the worker, connected, has completed no queue read for
    JOBS_STALL_SECONDS (the bake's tests/worker/test_probes.py): the chart sets it from
    worker.stallSeconds, minutes by default, and liveness reads that path."""
    for values, seconds in (({}, "300"), ({"worker": {"stallSeconds": 120}}, "120")):
        worker = _worker(render(chart_of(jobs_project), values))
        (container,) = worker["spec"]["template"]["spec"]["containers"]
        env = {item["name"]: item.get("value") for item in container["env"]}
        assert env["JOBS_STALL_SECONDS"] == seconds
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    with pytest.raises(helm_python.HelmError, match="stallSeconds"):
        render(chart_of(jobs_project), {"worker": {"stallSeconds": 5}})  # under one read's period


def test_workers_scale_on_the_queue_depth_when_asked_and_count_in_the_connection_budget(
    jobs_project: Path,
) -> None:
    chart = chart_of(jobs_project)
    default_hpas = [item for item in render(chart) if item["kind"] == "HorizontalPodAutoscaler"]
    assert [item["metadata"]["name"] for item in default_hpas] == ["shop-inventory-service"]
    scaled = {
        "worker": {"autoscaling": {"enabled": True, "maxReplicas": 4, "targetQueuedPerPod": 200}},
        "metrics": {"serviceMonitor": {"enabled": True}},
    }
    objects = render(chart, scaled)
    (hpa,) = [
        item
        for item in objects
        if item["kind"] == "HorizontalPodAutoscaler"
        and item["metadata"]["name"].endswith("-worker")
    ]
    assert hpa["spec"]["scaleTargetRef"]["name"] == _worker(objects)["metadata"]["name"]
    assert "replicas" not in _worker(objects)["spec"]  # the HPA owns the count
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External"
    assert metric["external"]["metric"]["name"] == "jobs_queued"
    assert metric["external"]["metric"]["selector"]["matchLabels"] == {
        "job": "shop-inventory-service-worker-metrics"
    }
    assert metric["external"]["target"] == {"type": "AverageValue", "averageValue": "200"}
    for item in objects:
        validate(item)
    # (8 + 1) x (8 + 1) + (8 + 1) worker pods + 1 migration = 91: not within 95 - 10.
    over = merge(
        scaled, {"worker": {"autoscaling": {"maxReplicas": 8}}, "database": {"maxConnections": 95}}
    )
    with pytest.raises(helm_python.HelmError, match="need 91 connections"):
        render(chart, over)
    with pytest.raises(helm_python.HelmError, match=r"needs metrics\.serviceMonitor\.enabled"):
        render(chart, {"worker": {"autoscaling": {"enabled": True}}})


def test_idle_connections_are_kept_longer_than_common_balancers_keep_theirs(chart: Path) -> None:
    """ALB and ingress-nginx close an idle upstream connection after 60 s: the server must not
    close first, or the balancer reuses a connection being closed (a 502)."""
    env = {item["name"]: item.get("value") for item in _container(render(chart))["env"]}
    assert float(env["TIMEOUT_KEEP_ALIVE"]) > 60


def test_memory_is_sized_from_a_measurement_not_pinned_and_stays_guaranteed(chart: Path) -> None:
    """The server peaks near 70 MiB under load: 8 replicas need not reserve 32 GiB."""
    sized = {"resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "1024Mi"}}}
    (container,) = find(render(chart, sized), "Deployment")["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "1024Mi"}
    with pytest.raises(helm_python.HelmError, match="must equal"):
        render(chart, {"resources": {"requests": {"memory": "1Gi"}}})
