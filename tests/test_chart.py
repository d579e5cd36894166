"""The baked Helm chart, through Helm's own code: lint, render, schema refusals, validity of every
rendered object, and the values file the capacity report writes."""

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import helm_python
import jsonschema
import pytest
import yaml

from .baking import VENV_BIN, bake, load_loadtest, run
from .charting import (
    EVERYTHING_ON,
    KUBERNETES_VERSIONS,
    RELEASE,
    chart_of,
    chart_with_values,
    crd_kinds,
    find,
    kinds,
    render,
    sdk_lint,
    validate,
)


def test_chart_passes_helm_lint_with_default_values_and_with_every_option_on(
    chart: Path, tmp_path: Path
) -> None:
    report = sdk_lint(chart)
    assert report["TotalChartsLinted"] == 1
    assert not report["Errors"]
    assert [message for message in report["Messages"] if message["Severity"] >= 2] == []
    for values in (None, EVERYTHING_ON):
        strict = helm_python.lint(chart, values, strict=True)
        assert strict["errors"] == [], strict["messages"]
    everything = tmp_path / "everything.yaml"
    everything.write_text(yaml.safe_dump(EVERYTHING_ON))
    assert not sdk_lint(chart_with_values(chart, tmp_path, everything))["Errors"]


def test_chart_of_a_custom_slug_is_named_after_it_and_lints(tmp_path: Path) -> None:
    """Helm templates are copied unrendered: their names come from Chart.yaml, which is rendered."""
    project = bake(
        tmp_path,
        project_name="Acme Catalog",
        project_slug="acme-catalog-api",
        package_name="catalog",
    )
    chart = project / "deploy" / "helm" / "acme-catalog-api"
    assert helm_python.lint(chart, strict=True)["errors"] == []
    deployment = find(render(chart), "Deployment")
    assert deployment["metadata"]["name"] == f"{RELEASE}-acme-catalog-api"
    assert (
        deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "acme-catalog-api:0.1.0"
    )


def test_make_helm_lint_lints_and_renders_the_chart(default_project: Path) -> None:
    result = run(default_project, "make", "-n", "helm-lint", "HELM=helm")
    assert result.returncode == 0, result.stderr
    assert "helm lint --strict deploy/helm/inventory-service" in result.stdout
    assert "helm template lint deploy/helm/inventory-service" in result.stdout


def test_chart_lint_fails_on_values_the_schema_refuses(chart: Path, tmp_path: Path) -> None:
    """The lint above can fail: the same Helm lint flags a values.yaml that asks for 2 workers."""
    bad = tmp_path / "two-workers.yaml"
    bad.write_text("server:\n  workers: 2\n")
    report = sdk_lint(chart_with_values(chart, tmp_path, bad))
    assert report["Errors"]
    assert any(
        message["Severity"] == 3 and message["Path"] == "values.yaml"
        for message in report["Messages"]
    )


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("values", [None, EVERYTHING_ON], ids=["defaults", "everything-on"])
def test_every_rendered_object_is_valid_against_its_schema(
    chart: Path, values: dict[str, Any] | None, version: str
) -> None:
    objects = render(chart, values)
    assert {
        "Deployment",
        "Service",
        "Job",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
    } <= kinds(objects)
    if values:
        assert {"Ingress", "ServiceMonitor"} <= kinds(objects)
    for item in objects:
        validate(item, version)


def test_schema_validation_refuses_an_unknown_field_of_a_custom_kind(chart: Path) -> None:
    """The check above can fail for a CRD kind too: a misspelt field is an error, not dropped."""
    monitor = find(render(chart, EVERYTHING_ON), "ServiceMonitor")
    assert "ServiceMonitor" in crd_kinds()
    monitor["spec"]["endpoints"][0]["scrapeTimeut"] = "5s"
    with pytest.raises(jsonschema.ValidationError, match="scrapeTimeut"):
        validate(monitor)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"server": {"workers": 2}}, "/server/workers"),
        ({"resources": {"limits": {"cpu": "2"}}}, "/resources/limits/cpu"),
        ({"resources": {"requests": {"cpu": "500m"}}}, "/resources/requests/cpu"),
        ({"resources": {"limits": {"memory": "8G"}}}, "/resources/limits/memory"),
        ({"resources": {"limits": {"memory": "1Gi"}}}, "must equal resources.limits.memory"),
        (
            {"resources": {"requests": {"memory": "128Mi"}, "limits": {"memory": "128Mi"}}},
            "below 256Mi",
        ),
        ({"database": {"poolMaxSize": 65}}, "/database/poolMaxSize"),
        ({"autoscaling": {"rpsMetric": {"enabled": True}}}, "/autoscaling/targetRPSPerPod"),
        # A URL as a value would stay in every revision of Helm's history: the Secret is the user's.
        ({"database": {"url": "postgresql://app:pw@db/app"}}, "url"),
        ({"image": {"pullPolicy": "IfNotPresent"}}, "with a tag alone"),
        ({"database": {"poolMaxSize": 12}}, "database pools need 118 connections"),
        ({"database": {"maxConnections": 50}}, "the database allows 40"),
        ({"database": {"poolMinSize": 9}}, "poolMinSize (9) exceeds"),
        ({"shutdown": {"terminationGracePeriodSeconds": 35}}, "must exceed"),
        ({"autoscaling": {"minReplicas": 9}}, "exceeds autoscaling.maxReplicas"),
    ],
    ids=lambda value: json.dumps(value) if isinstance(value, dict) else "",
)
def test_helm_refuses_values_that_break_the_pod_shape_or_the_connection_budget(
    chart: Path, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(
        helm_python.HelmError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        render(chart, values)


def test_chart_lints_with_the_values_file_the_capacity_report_writes(
    default_project: Path, chart: Path, tmp_path: Path
) -> None:
    capacity, budget = _capacity_modules(default_project)
    sized = capacity.size(
        scenario="mixed",
        slo_rps=1500.0,
        knee_rps=1800.0,
        knee_concurrency=8,
        serving_fraction=0.7,
        serving_p50_ms=4.0,
        max_p99_ms=50.0,
        assumptions=_assumptions(budget),
        peak_rss_mib=300.0,
    )
    values_file = capacity.write_helm_values(
        sized, "a test measurement", tmp_path / "values-capacity.yaml"
    )
    written = yaml.safe_load(values_file.read_text())
    assert written["autoscaling"]["targetRPSPerPod"] == sized.target_rps_per_pod > 0
    report = helm_python.lint(chart, written, strict=True)
    assert report["errors"] == [], report["messages"]
    assert not sdk_lint(chart_with_values(chart, tmp_path / "merged", values_file))["Errors"]
    (container,) = find(render(chart, written), "Deployment")["spec"]["template"]["spec"][
        "containers"
    ]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["MAX_IN_FLIGHT"] == str(sized.max_in_flight)
    assert env["LIMIT_CONCURRENCY"] == "1000"  # a cap on sockets, not measured: the chart's own
    assert env["POOL_MAX_SIZE"] == str(sized.pool_max_size)
    # The measured memory, requests = limits, beside the chart's one core.
    sized_memory = {"cpu": "1", "memory": f"{sized.memory.mib}Mi"}
    assert sized.memory.mib > 512  # above the chart's default: the file, not the default, set it
    assert container["resources"] == {"requests": sized_memory, "limits": sized_memory}


def test_the_memory_rules_floor_and_the_settings_it_assumes_are_the_charts(
    default_project: Path, chart: Path
) -> None:
    """The capacity report's smallest memory renders and one step below it is refused (the two
    floors are one); the sockets and body size it adds bodies for are what the pod runs with."""
    memory = load_loadtest(default_project, "search.memory")
    smallest = memory.size_memory(1.0, headroom=1.0)
    assert smallest.mib == memory.FLOOR_MIB
    for quantity in (f"{memory.FLOOR_MIB}Mi", "2Gi"):
        assert _container(render(chart, _memory(quantity)))["resources"]["limits"] == {
            "cpu": "1",
            "memory": quantity,
        }
    below = f"{memory.FLOOR_MIB - memory.ROUND_MIB}Mi"
    with pytest.raises(helm_python.HelmError, match=f"below {memory.FLOOR_MIB}Mi"):
        render(chart, _memory(below))
    env = {item["name"]: item for item in _container(render(chart))["env"]}
    assert env["LIMIT_CONCURRENCY"]["value"] == str(smallest.sockets)
    assert "MAX_BODY_BYTES" not in env  # the service's default, the rule's


def _memory(quantity: str) -> dict[str, Any]:
    return {"resources": {side: {"memory": quantity} for side in ("requests", "limits")}}


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container  # type: ignore[no-any-return]


def test_a_capacity_pool_too_large_for_the_replica_ceiling_is_refused(
    default_project: Path, chart: Path
) -> None:
    """A knee at 64 in flight sizes a 64-connection pool: 9 pods of it (and their probes' own
    connections) exceed 100 connections."""
    capacity, budget = _capacity_modules(default_project)
    sized = capacity.size(
        scenario="by_id",
        slo_rps=2000.0,
        knee_rps=2500.0,
        knee_concurrency=64,
        serving_fraction=0.7,
        serving_p50_ms=4.0,
        max_p99_ms=50.0,
        assumptions=_assumptions(budget),
    )
    written = yaml.safe_load(capacity.helm_values(sized, "a test measurement"))
    # Helm's lint only logs a template's `fail`; rendering (helm template, make helm-lint) stops.
    with pytest.raises(helm_python.HelmRenderError, match="database pools need 586 connections"):
        render(chart, written)


def _capacity_modules(project: Path) -> tuple[Any, Any]:
    """The baked project's own capacity report and budget reader (its src/ on the path: the
    load test's stages import the service's resources)."""
    return load_loadtest(project, "search.capacity"), load_loadtest(project, "plan.budget")


def _assumptions(budget: Any) -> Any:
    return budget.CapacityAssumptions()  # the defaults budget.toml starts from


def test_chart_readme_is_generated_from_the_schema_and_the_check_catches_a_stale_one(
    default_project: Path, tmp_path: Path
) -> None:
    chart = chart_of(default_project)
    readme = (chart / "README.md").read_text()
    schema = json.loads((chart / "values.schema.json").read_text())
    db_port = schema["properties"]["networkPolicy"]["properties"]["database"]["properties"]["port"]
    row = (
        f"| `networkPolicy.database.port` | `5432` | integer [1, 65535] "
        f"| {db_port['description']} |"
    )
    assert row in readme.splitlines()
    assert readme.count("\n| `") == _count_values(schema)  # every value of the schema, once
    assert (
        run(default_project, "make", "chart-readme", "CHECK=1", "BIN=" + str(VENV_BIN)).returncode
        == 0
    )

    copy = Path(shutil.copytree(default_project / "deploy", tmp_path / "deploy"))
    schema_file = copy / "helm" / default_project.name / "values.schema.json"
    schema["properties"]["networkPolicy"]["properties"]["database"]["properties"]["port"][
        "description"
    ] = "Moved."
    schema_file.write_text(json.dumps(schema))
    script = [sys.executable, str(copy / "helm" / "chart_readme.py")]
    stale = subprocess.run([*script, "--check"], capture_output=True, text=True, check=False)
    assert stale.returncode == 1
    assert "README.md is stale" in stale.stderr
    assert subprocess.run(script, check=False).returncode == 0
    assert subprocess.run([*script, "--check"], check=False).returncode == 0
    del schema["properties"]["replicaCount"]["description"]
    schema_file.write_text(json.dumps(schema))
    undescribed = subprocess.run(script, capture_output=True, text=True, check=False)
    assert undescribed.returncode == 2
    assert "replicaCount has no description" in undescribed.stderr


def _count_values(node: dict[str, Any]) -> int:
    children = node.get("properties")
    return sum(_count_values(child) for child in children.values()) if children else 1
