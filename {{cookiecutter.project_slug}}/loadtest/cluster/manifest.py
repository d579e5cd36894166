"""`make k6-cluster`: the k6 test of `make k6`, run in the cluster by k6-operator.

Writes two objects to apply with kubectl: a ConfigMap holding loadtest/drive/k6/crud.js and the config
that `make k6` generates from budget.toml (the same thresholds, the arrival rates scaled to the
number of pods under test), and a k6-operator TestRun that runs that script on `--parallelism`
runner pods against the release's Service. k6-operator splits the arrival rates and VUs between
the runners (k6 execution segments); each runner judges the thresholds on its own share.

The ids the runners request are seeded here, before any runner starts, through the service's API
at a URL this machine can reach (`--seed-url`; `--url` when it is reachable from here), and written
into the config, so every runner uses the same ids:

    kubectl -n prod port-forward svc/shop-<chart> 8080:80 &
    python -m loadtest.cluster --release shop --namespace prod --parallelism 4 --pods 6 \
        --seed-url http://127.0.0.1:8080
    kubectl apply -f loadtest/results/k6-cluster.yaml

Credentials: the seeding sends the headers of LOADTEST_HEADERS (loadtest/plan/headers.py); the runners
read theirs from the key LOADTEST_HEADERS of the Secret named by `--headers-secret`, through
the TestRun's runner env, so neither the ConfigMap nor the written file holds a secret:

    kubectl -n prod create secret generic shop-load-headers \
        --from-literal=LOADTEST_HEADERS="X-API-Key: $KEY"
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import project
from ..drive import k6, service
from ..plan import ENVIRONMENT, HeadersError, given, load, resources_in, to_run

CHART = project.HELM_VALUES.parent.name
CONFIG_FILE = "k6-config.json"  # beside the script: crud.js reads it when K6_CONFIG is unset
SCRIPT_FILE = "crud.js"


def kubectl_in(namespace: str) -> str:
    """kubectl as the hints print it: with `-n` unless the namespace is kubectl's own default."""
    return "kubectl" if namespace == "default" else f"kubectl -n {namespace}"


def service_url(release: str, namespace: str, port: int) -> str:
    """The release's Service, named as the chart names it (app.fullname in _helpers.tpl)."""
    fullname = release if CHART in release else f"{release}-{CHART}"
    return f"http://{fullname[:63].rstrip('-')}.{namespace}.svc.cluster.local:{port}"


def manifests(
    settings: dict[str, Any],
    *,
    name: str,
    namespace: str,
    release: str,
    parallelism: int,
    headers_secret: str | None = None,
) -> list[dict[str, Any]]:
    """The ConfigMap with the script and its config, and the TestRun that runs them; its runners
    take LOADTEST_HEADERS from the Secret `headers_secret` when one is named."""
    labels = {
        "app.kubernetes.io/part-of": CHART,
        "app.kubernetes.io/instance": release,
        "app.kubernetes.io/component": "loadtest",
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-script", "namespace": namespace, "labels": labels},
        "data": {SCRIPT_FILE: k6.SCRIPT.read_text(), CONFIG_FILE: json.dumps(settings, indent=2)},
    }
    test_run: dict[str, Any] = {
        "apiVersion": "k6.io/v1alpha1",
        "kind": "TestRun",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "parallelism": parallelism,
            "script": {"configMap": {"name": f"{name}-script", "file": SCRIPT_FILE}},
            # One tag on every sample, to tell this run's series apart in a metrics backend.
            "arguments": f"--tag testid={name}",
            "runner": {
                # The chart's NetworkPolicy lets this release's helper pods reach the service.
                "metadata": {"labels": labels},
                "resources": {
                    "requests": {"cpu": "1", "memory": "512Mi"},
                    "limits": {"memory": "1Gi"},
                },
                "securityContext": {
                    "runAsNonRoot": True,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containerSecurityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            },
        },
    }
    if headers_secret is not None:
        secret = {"secretKeyRef": {"name": headers_secret, "key": ENVIRONMENT}}
        test_run["spec"]["runner"]["env"] = [{"name": ENVIRONMENT, "valueFrom": secret}]
    return [config_map, test_run]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.cluster", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--release", default=CHART, help="Helm release of the service")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--parallelism", type=int, default=4, help="k6 runner pods")
    parser.add_argument(
        "--pods", type=float, default=1.0, help="service pods under test: rates x this"
    )
    parser.add_argument("--service-port", type=int, default=80, help="service.port of the chart")
    parser.add_argument("--url", help="target instead of the release's Service")
    parser.add_argument(
        "--seed-url",
        help="the service as this machine reaches it (kubectl port-forward), to seed the ids "
        "through its API; default: --url",
    )
    parser.add_argument(
        "--headers-secret",
        help=f"Secret whose key {ENVIRONMENT} holds the headers every request carries "
        "(an API key, a token), one `Name: value` per line",
    )
    parser.add_argument("--scenarios", type=lambda text: text.split(","), help="comma-separated")
    parser.add_argument("--seconds", type=float, default=60.0, help="steady part of each scenario")
    parser.add_argument("--name", default=f"{CHART}-load", help="TestRun name")
    parser.add_argument("--budget", type=Path, default=project.BUDGET)
    parser.add_argument("--output", type=Path, default=project.RESULTS / "k6-cluster.yaml")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.parallelism < 1 or args.pods <= 0:
        print("--parallelism must be at least 1 and --pods above 0", file=sys.stderr)
        return 2
    kubectl = kubectl_in(args.namespace)
    seed_url = args.seed_url or args.url
    if seed_url is None:
        print(
            "--seed-url is needed to seed the ids through the service's API, e.g. after "
            f"`{kubectl} port-forward svc/{args.release}-{CHART} 8080:80`: --seed-url http://127.0.0.1:8080",
            file=sys.stderr,
        )
        return 2
    try:
        headers = given()
        if headers and args.headers_secret is None:
            raise HeadersError(
                f"{ENVIRONMENT} is set for the seeding, but the runners would send no headers: "
                f"name the Secret that holds them with --headers-secret (HEADERS_SECRET=...)"
            )
        names = to_run(args.scenarios, load(args.budget))
        ids = service.seed_over_http(seed_url.rstrip("/"), k6.IDS, headers, resources_in(names))
    except HeadersError as error:
        print(error, file=sys.stderr)
        return 2
    budget = load(args.budget)
    url = args.url or service_url(args.release, args.namespace, args.service_port)
    settings = k6.config(
        budget,
        url=url,
        ids=ids,
        names=names,
        seconds=args.seconds,
        rate_scale=args.pods,
    )
    objects = manifests(
        settings,
        name=args.name,
        namespace=args.namespace,
        release=args.release,
        parallelism=args.parallelism,
        headers_secret=args.headers_secret,
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    # JSON documents are YAML documents: kubectl applies the stream as it is.
    args.output.write_text("".join(f"---\n{json.dumps(item, indent=2)}\n" for item in objects))
    print(
        f"wrote {args.output}: {kubectl} apply -f {args.output}; runners: {kubectl} get testrun"
        f" {args.name} -w; their summaries: {kubectl} logs -l k6_cr={args.name},runner=true"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
