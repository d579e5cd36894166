"""k6-operator manifests: the runners take the headers from a Secret, never from the ConfigMap."""

import pytest
from loadtest import project
from loadtest.cluster import manifest as cluster
from loadtest.drive.k6 import config
from loadtest.plan.budget import load
from loadtest.plan.declared import plural
from loadtest.plan.headers import ENVIRONMENT

from ...declared import first_resource

FIRST = plural(first_resource())

SECRET = "s3cret-value-of-the-test"


def test_the_cluster_runners_take_the_headers_from_a_secret_and_the_configmap_holds_none() -> None:
    names = [f"{FIRST}.by_id"]
    settings = config(
        load(project.BUDGET), url="http://x", ids={FIRST: [1]}, names=names, seconds=1.0
    )
    config_map, test_run = cluster.manifests(
        settings, name="t", namespace="n", release="r", parallelism=2, headers_secret="r-headers"
    )
    assert test_run["spec"]["runner"]["env"] == [
        {
            "name": ENVIRONMENT,
            "valueFrom": {"secretKeyRef": {"name": "r-headers", "key": ENVIRONMENT}},
        }
    ]
    plain = cluster.manifests(settings, name="t", namespace="n", release="r", parallelism=2)
    assert "env" not in plain[1]["spec"]["runner"]
    assert plain[0] == config_map


def test_k6_cluster_refuses_headers_for_the_seeding_when_no_secret_carries_them_to_the_runners(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(ENVIRONMENT, f"X-API-Key: {SECRET}")
    assert cluster.main(["--seed-url", "http://127.0.0.1:9"]) == 2
    error = capsys.readouterr().err
    assert "--headers-secret" in error
    assert SECRET not in error


def test_the_hints_carry_the_namespace_when_one_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cluster.main(["--namespace", "prod", "--release", "shop"]) == 2
    assert (
        f"`kubectl -n prod port-forward svc/shop-{cluster.CHART} 8080:80`"
        in capsys.readouterr().err
    )
    assert cluster.kubectl_in("prod") == "kubectl -n prod"
    assert cluster.kubectl_in("default") == "kubectl"
