"""Render, lint and validate a baked chart with Helm's own code, and check every object it emits.

The chart is linted by helm-sdkpy (Helm v4's own lint) and rendered by helm-python-sdk (Helm v4's
own engine, values.schema.json included). Built-in kinds are validated against the Kubernetes
OpenAPI schemas by kubernetes-validate; custom kinds (ServiceMonitor, PrometheusRule, k6-operator's
TestRun) against the schemas of their CRDs, vendored in tests/schemas/.
"""

import asyncio
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import helm_python
import helm_sdkpy
import jsonschema
import kubernetes_validate
import yaml

from .baking import tool_env

RELEASE = "shop"
NAMESPACE = "default"
# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
KUBERNETES_VERSIONS = ["1.27.0", kubernetes_validate.utils.latest_version()]
SCHEMAS = Path(__file__).resolve().parent / "schemas"
DIGEST = "sha256:" + "0123456789abcdef" * 4
# The database Secret a user creates before installing (the chart takes no URL as a value), and
# what it holds: `service_settings` reads it as the kubelet would hand it to the pod.
DATABASE_URL = "postgresql://app:pw@db:5432/app"
DATABASE = {"database": {"existingSecret": "shop-db"}}
STORED = {"shop-db": {"DATABASE_URL": DATABASE_URL}}
# Every option of the chart switched on.
EVERYTHING_ON: dict[str, Any] = {
    "image": {"digest": DIGEST},
    "ingress": {
        "enabled": True,
        "className": "nginx",
        "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}],
    },
    "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
    "autoscaling": {"rpsMetric": {"enabled": True}, "targetRPSPerPod": 350},
    "database": {"existingSecret": "shop-db"},
    "networkPolicy": {"enabled": True, "database": {"to": [{"ipBlock": {"cidr": "10.0.12.0/24"}}]}},
}

# What an auth=api_key and an auth=jwt bake need to install (api_key: digests the chart stores in
# a Secret; jwt: the issuer, and where it is for the NetworkPolicy).
AUTH_ON: dict[str, dict[str, Any]] = {
    "api_key": {"auth": {"apiKey": {"hashes": "ab" * 32}}},
    "jwt": {
        "auth": {
            "jwt": {
                "issuer": "https://login.example.com/realms/shop",
                "audience": "shop-api",
                "jwksUrl": "https://login.example.com/realms/shop/certs",
            }
        },
        "networkPolicy": {"jwks": {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}},
    },
}


def chart_of(project: Path) -> Path:
    return project / "deploy" / "helm" / project.name


def run_helm_test(chart: Path, base_url: str) -> subprocess.CompletedProcess[str]:
    """The chart's `helm test` script (files/helm_test.py) run against `base_url`."""
    return subprocess.run(
        [sys.executable, str(chart / "files" / "helm_test.py")],
        env={"BASE_URL": base_url},
        capture_output=True,
        text=True,
        check=False,
    )


def render(chart: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """`helm template` through Helm's engine: the schema is enforced, then every template runs
    (hooks and test hooks included, as `helm template` prints them)."""
    with helm_python.Chart.load(chart) as loaded:
        manifests = loaded.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [
        document
        for path, text in sorted(manifests.items())
        if path.endswith(".yaml")
        for document in yaml.safe_load_all(text)
        if document
    ]


def find(objects: list[dict[str, Any]], kind: str, component: str | None = None) -> dict[str, Any]:
    """The one object of `kind` (and of `app.kubernetes.io/component` label `component`)."""
    (found,) = [
        item
        for item in objects
        if item["kind"] == kind
        and (
            component is None
            or item["metadata"]["labels"].get("app.kubernetes.io/component") == component
        )
    ]
    return found


def kinds(objects: list[dict[str, Any]]) -> set[str]:
    return {item["kind"] for item in objects}


def sdk_lint(chart: Path) -> dict[str, Any]:
    result: dict[str, Any] = asyncio.run(
        helm_sdkpy.Lint(helm_sdkpy.Configuration()).run(str(chart))
    )
    return result


def chart_with_values(chart: Path, tmp_path: Path, values_file: Path) -> Path:
    """A copy of the chart whose values.yaml is the default deep-merged with `values_file`, which
    is what `helm lint -f values_file` lints (helm-sdkpy's lint takes no values argument)."""
    copy = Path(shutil.copytree(chart, tmp_path / chart.name))
    merged = merge(
        yaml.safe_load((chart / "values.yaml").read_text()), yaml.safe_load(values_file.read_text())
    )
    (copy / "values.yaml").write_text(yaml.safe_dump(merged))
    return copy


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        both_maps = isinstance(value, dict) and isinstance(base.get(key), dict)
        merged[key] = merge(base[key], value) if both_maps else value
    return merged


def validate(item: dict[str, Any], version: str = KUBERNETES_VERSIONS[-1]) -> None:
    """Raise when `item` is not a valid object of its kind (unknown fields included)."""
    group_version, kind = item["apiVersion"], item["kind"]
    custom = _crd_validators().get((group_version, kind))
    if custom is None:
        kubernetes_validate.validate(item, version, strict=True)
    else:
        custom.validate(item)


def crd_kinds() -> set[str]:
    return {kind for _, kind in _crd_validators()}


@functools.cache
def _crd_validators() -> dict[tuple[str, str], Any]:
    validators = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        crd = json.loads(path.read_text())
        schema = _closed(crd["openAPIV3Schema"])
        validators[(f"{crd['group']}/{crd['version']}", crd["kind"])] = jsonschema.Draft7Validator(
            schema
        )
    return validators


def _closed(node: Any) -> Any:
    """The schema with unknown fields refused, as `kubectl apply --validate=strict` refuses them
    (the API server would otherwise drop them without a word)."""
    if isinstance(node, list):
        return [_closed(value) for value in node]
    if not isinstance(node, dict):
        return node
    closed = {key: _closed(value) for key, value in node.items()}
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        closed["additionalProperties"] = False
    return closed


def pod_selectors(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Every label selector of the rendered objects that picks pods, by where it was found."""
    found: dict[str, dict[str, str]] = {}
    for item in objects:
        where = f"{item['kind']}/{item['metadata']['name']}"
        spec = item.get("spec", {})
        if item["kind"] == "Service":
            found[f"{where} selector"] = spec["selector"]
        elif item["kind"] in {"Deployment", "PodDisruptionBudget"}:
            found[f"{where} selector"] = spec["selector"]["matchLabels"]
        elif item["kind"] == "NetworkPolicy":
            found[f"{where} podSelector"] = spec["podSelector"]["matchLabels"]
        pod = spec.get("template", {}).get("spec", {})
        for index, constraint in enumerate(pod.get("topologySpreadConstraints", [])):
            found[f"{where} topologySpread[{index}]"] = constraint["labelSelector"]["matchLabels"]
    return found


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and selector.items() <= labels.items()


def pod_variables(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The environment of the Deployment's container, EnvVar objects by name."""
    (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return {item["name"]: item for item in container["env"]}


def service_settings(
    project: Path,
    objects: list[dict[str, Any]],
    secrets_dir: Path | None = None,
    stored: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The baked service's Settings, built in a fresh process from exactly what the rendered pod
    gets: its variables and its secret files, from the rendered Secrets and those the user created
    (`stored`, by default the database Secret of DATABASE); `secrets_dir` instead of the files."""
    secrets = {**STORED, **(stored or {})}
    secrets |= {
        item["metadata"]["name"]: item["stringData"] for item in objects if item["kind"] == "Secret"
    }
    env = {}
    for name, variable in pod_variables(objects).items():
        reference = variable.get("valueFrom", {}).get("secretKeyRef")
        env[name] = secrets[reference["name"]][reference["key"]] if reference else variable["value"]
    if secrets_dir is None:
        secrets_dir = _secret_files(objects, secrets)
    if secrets_dir is not None:
        env["SECRETS_DIR"] = str(secrets_dir)
    (package,) = [path.name for path in (project / "src").iterdir() if path.is_dir()]
    script = (
        f"import sys; from {package}.settings import Settings as S; print(S().model_dump_json())"
    )
    tools = tool_env(project)
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": tools["PATH"], "PYTHONPATH": tools["PYTHONPATH"], **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    settings: dict[str, Any] = json.loads(result.stdout)
    assert {name.lower() for name in env} <= settings.keys()  # every variable is a setting
    return settings


def _secret_files(objects: list[dict[str, Any]], secrets: dict[str, dict[str, str]]) -> Path | None:
    """What the kubelet writes for the Deployment's `secrets` volume: each item of each Secret, a
    file named after its `path`, in a fresh folder; None when the pod mounts no Secret."""
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    volumes = [volume for volume in pod["volumes"] if volume["name"] == "secrets"]
    if not volumes:
        return None
    (volume,) = volumes
    sources = [item["secret"] for item in volume.get("projected", {}).get("sources", [])]
    if "secret" in volume:
        sources = [{"name": volume["secret"]["secretName"], "items": volume["secret"]["items"]}]
    folder = Path(tempfile.mkdtemp(prefix="secrets-"))
    for source in sources:
        for item in source["items"]:
            (folder / item["path"]).write_text(secrets[source["name"]][item["key"]])
    return folder
