"""The chart can hand the database Secret to the service as files (secrets.asFiles) instead of an
environment variable; the service reads it from SECRETS_DIR (/run/secrets)."""

from pathlib import Path
from typing import Any

from .charting import find, render, validate


def _pod(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = find(objects, "Deployment")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    return spec, container


def test_as_variables_the_database_url_is_an_environment_variable_and_no_secret_is_mounted(
    chart: Path,
) -> None:
    spec, container = _pod(render(chart, {"secrets": {"asFiles": False}}))
    assert "DATABASE_URL" in [variable["name"] for variable in container["env"]]
    assert "secrets" not in [volume["name"] for volume in spec["volumes"]]
    (job,) = find(render(chart, {"secrets": {"asFiles": False}}), "Job")["spec"]["template"][
        "spec"
    ]["containers"]
    assert [variable["name"] for variable in job["env"]] == ["DATABASE_URL"]


def test_as_files_the_secret_is_mounted_read_only_where_the_service_looks_not_in_the_environment(
    chart: Path,
) -> None:
    values = {
        "database": {"existingSecret": "prod-db", "existingSecretKey": "url"}
    }  # files: default
    objects = render(chart, values)
    spec, container = _pod(objects)
    assert "DATABASE_URL" not in [variable["name"] for variable in container["env"]]
    (mount,) = [item for item in container["volumeMounts"] if item["name"] == "secrets"]
    assert mount == {"name": "secrets", "mountPath": "/run/secrets", "readOnly": True}
    (volume,) = [item for item in spec["volumes"] if item["name"] == "secrets"]
    assert volume["secret"]["secretName"] == "prod-db"
    assert volume["secret"]["items"] == [{"key": "url", "path": "DATABASE_URL"}]
    validate(find(objects, "Deployment"))
