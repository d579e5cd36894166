"""The chart's PrometheusRule: the alerts that matter for this service, each valid PromQL (parsed by
promql-parser, the Rust parser of the Prometheus grammar) on series the service really exports,
each with a runbook line."""

import tomllib
from pathlib import Path
from typing import Any

import helm_python
import promql_parser
import pytest
import yaml

from .baking import load_module
from .charting import EVERYTHING_ON, find, merge, render

ALERTS = {
    "ServerErrorRatioHigh",
    "LatencyP99OverBudget",
    "PoolAcquireWaitHigh",
    "EventLoopLagHigh",
    "RequestsRefusedByAdmission",
    "PodRestarting",
}
# Exported by kube-state-metrics, not by the service.
CLUSTER_SERIES = {"kube_pod_container_status_restarts_total"}


def _rules(chart: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    rule = find(render(chart, merge(EVERYTHING_ON, values or {})), "PrometheusRule")
    (group,) = rule["spec"]["groups"]
    rules: list[dict[str, Any]] = group["rules"]
    return rules


def _exported_series(project: Path) -> set[str]:
    """Every series name the service's metrics registry exposes (counters as <name>_total,
    histograms as _bucket, _sum and _count)."""
    metrics = load_module(project, "inventory_service", "observability.metrics").Metrics()
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
    return {
        family.name + suffix
        for family in metrics.registry.collect()
        for suffix in suffixes.get(family.type, [""])
    }


def _selectors(node: Any) -> list[Any]:
    """The vector selectors of a parsed PromQL expression."""
    if isinstance(node, promql_parser.VectorSelector):
        return [node]
    children = [
        getattr(node, name, None) for name in ("lhs", "rhs", "expr", "param", "vector_selector")
    ]
    children += list(getattr(node, "args", None) or [])
    return [found for child in children if child is not None for found in _selectors(child)]


def test_alerts_cover_errors_latency_pool_loop_admission_and_restarts_each_with_a_runbook(
    chart: Path,
) -> None:
    rules = _rules(chart)
    assert {rule["alert"] for rule in rules} == ALERTS
    for rule in rules:
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"]
        assert len(rule["annotations"]["runbook"]) > 40
        assert "runbook_url" not in rule["annotations"]
    linked = _rules(
        chart, {"metrics": {"prometheusRule": {"runbookUrl": "https://wiki.example.com/shop"}}}
    )
    for rule in linked:
        assert (
            rule["annotations"]["runbook_url"]
            == f"https://wiki.example.com/shop#{rule['alert'].lower()}"
        )
    assert "PrometheusRule" not in {item["kind"] for item in render(chart)}


def test_every_alert_is_valid_promql_on_series_the_service_exports_under_its_scrape_job(
    default_project: Path, chart: Path
) -> None:
    exported = _exported_series(default_project)
    assert {
        "http_requests_total",
        "http_request_duration_seconds_bucket",
        "event_loop_lag_seconds_bucket",
    } <= exported
    objects = render(chart, EVERYTHING_ON)
    job = next(item for item in objects if item["metadata"]["name"].endswith("-metrics"))[
        "metadata"
    ]["name"]
    (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    for rule in _rules(chart):
        selectors = _selectors(promql_parser.parse(rule["expr"]))
        assert selectors, rule["alert"]
        for selector in selectors:
            labels = {matcher.name: matcher.value for matcher in selector.matchers.matchers}
            assert selector.name in exported | CLUSTER_SERIES, (rule["alert"], selector.name)
            assert labels["namespace"] == "default"
            if selector.name in CLUSTER_SERIES:
                assert labels["container"] == container["name"]
            else:
                assert labels["job"] == job, rule["alert"]


def test_the_alert_checks_catch_broken_promql_and_a_misspelt_series(
    default_project: Path, chart: Path
) -> None:
    """The check above can fail: a dropped bracket is not PromQL, and `http_request_total` (no s)
    is a series nobody exports."""
    (errors,) = [rule for rule in _rules(chart) if rule["alert"] == "ServerErrorRatioHigh"]
    with pytest.raises(ValueError, match="unexpected"):
        promql_parser.parse(errors["expr"].replace("[5m]", "[5m", 1))
    misspelt = promql_parser.parse(
        errors["expr"].replace("http_requests_total", "http_request_total")
    )
    names = {selector.name for selector in _selectors(misspelt)}
    assert names == {"http_request_total"}
    assert not names & _exported_series(default_project)


def test_latency_alert_fires_above_the_p99_of_the_load_test_budget(
    default_project: Path, chart: Path
) -> None:
    budget = tomllib.loads((default_project / "loadtest" / "budget.toml").read_text())
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert (
        values["metrics"]["prometheusRule"]["p99Seconds"] == budget["defaults"]["max_p99_ms"] / 1000
    )
    (latency,) = [rule for rule in _rules(chart) if rule["alert"] == "LatencyP99OverBudget"]
    assert latency["expr"].startswith("histogram_quantile(0.99,")
    assert latency["expr"].endswith("> 0.05")


def test_alerts_without_the_service_monitor_are_refused(chart: Path) -> None:
    with pytest.raises(helm_python.HelmError, match="/metrics/serviceMonitor/enabled"):
        render(chart, {"metrics": {"prometheusRule": {"enabled": True}}})
