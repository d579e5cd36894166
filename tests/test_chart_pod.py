"""The pod the chart runs: one worker on one core, the agreed variables, shutdown timings,
security context, the database Secret, the migration hook and the autoscaler."""

import math
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from .baking import load_module
from .charting import EVERYTHING_ON, find, render


def test_deployment_is_one_worker_on_exactly_one_core_and_the_measured_memory(chart: Path) -> None:
    pod = find(render(chart), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    cpu_and_memory = {"cpu": "1", "memory": "512Mi"}
    assert container["resources"] == {"requests": cpu_and_memory, "limits": cpu_and_memory}
    # The image's own `python -m <package>` runs: neither is overridden.
    assert "command" not in container
    assert "args" not in container
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_deployment_passes_server_and_pool_values_as_the_agreed_variables(chart: Path) -> None:
    values = {
        "server": {
            "maxInFlight": 23,
            "limitConcurrency": 37,
            "backlog": 512,
            "timeoutGracefulShutdown": 15,
        },
        "database": {"poolMinSize": 3, "poolMaxSize": 6, "statementCacheSize": 0},
    }
    (container,) = find(render(chart, values), "Deployment")["spec"]["template"]["spec"][
        "containers"
    ]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert (
        env
        | {
            "MAX_IN_FLIGHT": "23",
            "LIMIT_CONCURRENCY": "37",
            "BACKLOG": "512",
            "TIMEOUT_GRACEFUL_SHUTDOWN": "15",
            "POOL_MIN_SIZE": "3",
            "POOL_MAX_SIZE": "6",
            "STATEMENT_CACHE_SIZE": "0",
            "HOST": "0.0.0.0",
        }
        == env
    )


def test_every_variable_the_chart_sets_is_a_setting_of_the_service(
    default_project: Path, chart: Path
) -> None:
    settings = load_module(default_project, "inventory_service", "settings")
    known = {name.upper() for name in settings.Settings.model_fields}
    (container,) = find(render(chart), "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {item["name"] for item in container["env"]} <= known


# uvicorn's Server: main_loop notices SIGTERM at its next 0.1 s tick, shutdown() pauses 0.1 s
# before the drain; neither is a value of the chart's.
UVICORN_PAUSES_SECONDS = 0.2


def test_shutdown_sleeps_before_sigterm_and_the_grace_period_outlasts_the_drain_and_the_close(
    default_project: Path, chart: Path
) -> None:
    """The check counts the service's own close bound (db.py CLOSE_SECONDS, the pool and the
    readiness probe's connection together): the first whole second above the preStop sleep, the
    drain, that bound and uvicorn's pauses is accepted, the second before it refused."""
    close = load_module(default_project, "inventory_service", "db").CLOSE_SECONDS
    values = yaml.safe_load((chart / "values.yaml").read_text())
    pod = find(render(chart), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    assert int(command[1]) == values["shutdown"]["preStopSleepSeconds"]
    takes = int(command[1]) + values["server"]["timeoutGracefulShutdown"] + close
    shortest = math.ceil(takes + UVICORN_PAUSES_SECONDS)
    render(chart, {"shutdown": {"terminationGracePeriodSeconds": shortest}})
    with pytest.raises(helm_python.HelmRenderError, match="must exceed preStopSleepSeconds"):
        render(chart, {"shutdown": {"terminationGracePeriodSeconds": shortest - 1}})
    assert pod["terminationGracePeriodSeconds"] >= shortest


def test_pod_runs_non_root_on_a_read_only_root_with_a_tmp_volume(chart: Path) -> None:
    objects = render(chart)
    for pod in (find(objects, kind)["spec"]["template"]["spec"] for kind in ("Deployment", "Job")):
        (container,) = pod["containers"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["automountServiceAccountToken"] is False
        assert container["securityContext"] == {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
        mounts = {mount["mountPath"]: mount for mount in container["volumeMounts"]}
        assert mounts.keys() == {"/tmp", "/run/secrets"}  # the only writable one, the Secrets
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert volumes[mounts["/tmp"]["name"]]["emptyDir"]
        assert mounts["/run/secrets"]["readOnly"] is True


def test_database_url_comes_from_the_users_secret_and_an_existing_one_is_used_as_is(
    chart: Path,
) -> None:
    def url_source(objects: list[dict[str, Any]]) -> dict[str, Any]:
        (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
        (variable,) = [item for item in container["env"] if item["name"] == "DATABASE_URL"]
        assert "value" not in variable
        return dict(variable["valueFrom"]["secretKeyRef"])

    as_variables = {"secrets": {"asFiles": False}}
    named = render(chart, as_variables)
    assert url_source(named) == {"name": "shop-inventory-service-database", "key": "DATABASE_URL"}
    assert [item for item in named if item["kind"] == "Secret"] == []  # the user creates it

    existing = render(
        chart,
        {"database": {"existingSecret": "prod-db", "existingSecretKey": "url"}, **as_variables},
    )
    assert [item for item in existing if item["kind"] == "Secret"] == []
    assert url_source(existing) == {"name": "prod-db", "key": "url"}
    (job,) = find(existing, "Job")["spec"]["template"]["spec"]["containers"]
    assert job["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "prod-db", "key": "url"}


def test_migrations_run_as_a_pre_install_and_pre_upgrade_hook_with_the_migrate_command(
    chart: Path,
) -> None:
    job = find(render(chart), "Job")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "inventory_service", "migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_autoscaler_uses_cpu_by_default_and_rps_per_pod_when_asked(chart: Path) -> None:
    default = find(render(chart), "HorizontalPodAutoscaler")["spec"]
    assert [metric["type"] for metric in default["metrics"]] == ["Resource"]
    assert default["metrics"][0]["resource"]["name"] == "cpu"
    with_rps = find(render(chart, EVERYTHING_ON), "HorizontalPodAutoscaler")["spec"]
    (pods,) = [metric["pods"] for metric in with_rps["metrics"] if metric["type"] == "Pods"]
    assert pods["target"] == {"type": "AverageValue", "averageValue": "350"}
    disabled = render(chart, {"autoscaling": {"enabled": False}, "replicaCount": 3})
    assert "HorizontalPodAutoscaler" not in {item["kind"] for item in disabled}
    assert find(disabled, "Deployment")["spec"]["replicas"] == 3
