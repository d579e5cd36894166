"""What a release of the chart runs and how it is upgraded, rendered by Helm's own engine: the image
by digest (a tag alone is pulled every time), the migration Job only when the image changes, the
database URL as a file for the Job too, and the commands NOTES.txt prints."""

import shutil
import subprocess
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from .charting import DIGEST, NAMESPACE, RELEASE, chart_of, find, render

OTHER_DIGEST = "sha256:" + "f" * 64


def _pull_policies(objects: list[dict[str, Any]]) -> set[str]:
    pods = [
        item["spec"]["template"]["spec"] if "template" in item["spec"] else item["spec"]
        for item in objects
        if item["kind"] in {"Deployment", "Job", "Pod"}
    ]
    return {container["imagePullPolicy"] for pod in pods for container in pod["containers"]}


def test_an_image_by_digest_is_pulled_if_absent_and_a_tag_alone_every_time(
    chart: Path, jobs_project: Path
) -> None:
    pinned = render(chart, {"image": {"digest": DIGEST, "tag": "sha-abc"}})
    assert find(pinned, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"] == (
        f"inventory-service:sha-abc@{DIGEST}"
    )
    assert _pull_policies(pinned) == {"IfNotPresent"}
    # The Deployment, the migration Job, the helm test pod and the worker: every pod of the release.
    tagged = render(chart_of(jobs_project), {"image": {"tag": "sha-abc"}})
    assert len([item for item in tagged if item["kind"] in {"Deployment", "Job", "Pod"}]) == 4
    assert _pull_policies(tagged) == {"Always"}
    assert _pull_policies(render(chart, {"image": {"pullPolicy": "Always"}})) == {"Always"}


@pytest.mark.parametrize("policy", ["IfNotPresent", "Never"])
def test_a_tag_alone_that_nodes_would_not_pull_again_is_refused(chart: Path, policy: str) -> None:
    with pytest.raises(helm_python.HelmError, match=r"image.digest=sha256"):
        render(chart, {"image": {"tag": "0.1.0", "pullPolicy": policy}})
    assert _pull_policies(render(chart, {"image": {"digest": DIGEST, "pullPolicy": policy}})) == {
        policy
    }


# The decision of templates/_helpers.tpl (app.migrationNeeded), with the live Deployment given as
# the cluster's `lookup` would return it: `helm template` has no cluster to ask.
DECISION = """apiVersion: v1
kind: ConfigMap
metadata:
  name: decision
data:
  run: {{ include "app.migrationNeeded" (dict "root" $ "live" (fromYaml %s)) | quote }}
"""


def _decides(
    chart: Path,
    tmp_path: Path,
    values: dict[str, Any],
    live: dict[str, Any] | None,
    **release: bool,
) -> bool:
    """Whether the migration Job runs in a release of `values`, the cluster holding `live`."""
    copy = tmp_path / f"chart-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(chart, copy)
    (copy / "templates" / "decision.yaml").write_text(DECISION % _quoted(live or {}))
    with helm_python.Chart.load(copy) as loaded:
        manifests = loaded.render(values, name=RELEASE, namespace=NAMESPACE, **release)
    decision = yaml.safe_load(manifests[f"{chart.name}/templates/decision.yaml"])
    return bool(decision["data"]["run"])


def _quoted(value: dict[str, Any]) -> str:
    text = yaml.safe_dump(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _live(image: str | None) -> dict[str, Any]:
    """The release's Deployment as the cluster holds it, with the image its migrations ran for."""
    annotations = {} if image is None else {"migrations.inventory-service/image": image}
    return {
        "kind": "Deployment",
        "metadata": {"name": "shop-inventory-service", "annotations": annotations},
    }


def test_the_migration_job_runs_on_install_and_for_another_image_only(
    chart: Path, tmp_path: Path
) -> None:
    pinned = {"image": {"digest": DIGEST}}
    image = f"inventory-service:0.1.0@{DIGEST}"
    upgrade = {"is_install": False, "is_upgrade": True}
    assert _decides(chart, tmp_path, pinned, None, is_install=True)
    # A values-only change (replicas, log level) waits on no Job, and so on no database.
    assert not _decides(chart, tmp_path, pinned, _live(image), **upgrade)
    assert _decides(chart, tmp_path, {"image": {"digest": OTHER_DIGEST}}, _live(image), **upgrade)
    # A tag can name another image than last time: it always migrates.
    assert _decides(chart, tmp_path, {}, _live("inventory-service:0.1.0"), **upgrade)
    # The last release ran no migrations (off, or a Deployment older than the annotation).
    assert _decides(chart, tmp_path, pinned, _live(None), **upgrade)
    assert _decides(
        chart, tmp_path, {**pinned, "migrations": {"always": True}}, _live(image), **upgrade
    )
    assert not _decides(chart, tmp_path, {"migrations": {"enabled": False}}, None, is_install=True)


def test_the_deployment_records_the_image_whose_migrations_ran(chart: Path) -> None:
    deployment = find(render(chart, {"image": {"digest": DIGEST}}), "Deployment")
    assert deployment["metadata"]["annotations"] == {
        "migrations.inventory-service/image": f"inventory-service:0.1.0@{DIGEST}"
    }
    # Not in the pod template: recording it rolls no pod.
    assert (
        "migrations.inventory-service/image"
        not in deployment["spec"]["template"]["metadata"]["annotations"]
    )
    off = find(render(chart, {"migrations": {"enabled": False}}), "Deployment")
    assert "annotations" not in off["metadata"]


def test_the_migration_job_reads_the_database_url_alone_from_a_file(chart: Path) -> None:
    objects = render(chart, {"database": {"existingSecret": "prod-db", "existingSecretKey": "url"}})
    job = find(objects, "Job")["spec"]["template"]["spec"]
    (container,) = job["containers"]
    assert "env" not in container  # in no environment: not in kubectl describe, not in /proc
    mounts = {mount["name"]: mount for mount in container["volumeMounts"]}
    assert mounts["secrets"] == {"name": "secrets", "mountPath": "/run/secrets", "readOnly": True}
    (volume,) = [item for item in job["volumes"] if item["name"] == "secrets"]
    assert volume["secret"]["secretName"] == "prod-db"
    assert volume["secret"]["items"] == [{"key": "url", "path": "DATABASE_URL"}]
    # No Secret of the chart's own: no hook re-created by each upgrade and left after uninstall.
    assert [item for item in objects if item["kind"] == "Secret"] == []


def test_the_migrations_read_the_url_from_the_secret_file_the_job_mounts(
    default_project: Path, tmp_path: Path, postgres_url: str
) -> None:
    """migrations/env.py, as the Job runs it: DATABASE_URL in no variable, only in SECRETS_DIR."""
    from .baking import tool_env
    from .serving import scratch_database

    with scratch_database(postgres_url, "migrate_from_file") as url:
        (tmp_path / "DATABASE_URL").write_text(url + "\n")
        env = {
            key: value for key, value in tool_env(default_project).items() if key != "DATABASE_URL"
        }
        result = subprocess.run(
            ["alembic", "upgrade", "heads"],
            cwd=default_project,
            env={**env, "SECRETS_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr[-2000:]


def _notes(chart: Path, values: dict[str, Any] | None = None) -> str:
    with helm_python.Chart.load(chart) as loaded:
        manifests = loaded.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return manifests[f"{chart.name}/templates/NOTES.txt"]


def test_notes_print_an_upgrade_that_rolls_back_and_a_port_forward_that_reaches_curl(
    chart: Path,
) -> None:
    notes = _notes(chart)
    (upgrade,) = [line for line in notes.splitlines() if line.strip().startswith("helm upgrade")]
    assert "--wait --atomic" in upgrade
    assert "--rollback-on-failure" in notes  # Helm 4's name for --atomic
    (forward,) = [line for line in notes.splitlines() if "kubectl port-forward" in line]
    # port-forward runs until stopped: `&&` would never reach curl.
    assert "&&" not in forward
    assert forward.index(" & ") < forward.index("curl ") < forward.index("kill %1")
    assert "create-read-delete round trip" in notes


def test_notes_say_what_helm_test_checks_in_an_auth_bake(api_key_project: Path) -> None:
    notes = _notes(chart_of(api_key_project), {"auth": {"apiKey": {"existingSecret": "keys"}}})
    assert "create-read-delete" not in notes
    assert "without credentials must be refused with 401" in notes


def test_notes_say_when_the_measured_rps_target_is_not_used(chart: Path) -> None:
    measured = {"autoscaling": {"targetRPSPerPod": 2833}}
    assert "scales on CPU alone" in _notes(chart, measured)
    enabled = {"autoscaling": {"targetRPSPerPod": 2833, "rpsMetric": {"enabled": True}}}
    assert "scales on CPU alone" not in _notes(chart, enabled)


def test_the_chart_readme_gives_the_rolling_back_upgrade_and_what_helm_test_checks_per_variant(
    default_project: Path, api_key_project: Path
) -> None:
    plain = (chart_of(default_project) / "README.md").read_text()
    guarded = (chart_of(api_key_project) / "README.md").read_text()
    for readme in (plain, guarded):
        assert "--wait --atomic" in readme
        assert "--set image.digest=sha256:" in readme
    assert "create-read-delete round trip" in plain
    assert "create-read-delete" not in guarded
    assert "without credentials refused (401)" in guarded
