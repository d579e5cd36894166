"""The chart of an auth=api_key bake hands the service API_KEY_HASHES from a Secret (a variable,
or a file with secrets.asFiles), the way it hands it DATABASE_URL; an auth=none bake's chart has
no trace of authentication. Both auth bakes lint, render valid objects and document their values
(auth=jwt: test_chart_auth_jwt.py)."""

import hashlib
import json
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from .baking import run
from .charting import (
    AUTH_ON,
    DATABASE,
    DATABASE_URL,
    EVERYTHING_ON,
    KUBERNETES_VERSIONS,
    STORED,
    chart_of,
    find,
    merge,
    pod_variables,
    render,
    run_helm_test,
    service_settings,
    validate,
)
from .serving import migrated_database, start_service

DIGEST_A, DIGEST_B = "ab" * 32, "0c" * 32


def _with_keys(hashes: str, **values: Any) -> dict[str, Any]:
    return merge(merge(DATABASE, values), {"auth": {"apiKey": {"hashes": hashes}}})


def _secrets(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["metadata"]["name"]: item for item in objects if item["kind"] == "Secret"}


def test_an_api_key_bake_reads_the_digests_from_the_secret_the_chart_creates_or_an_existing_one(
    api_key_project: Path,
) -> None:
    chart = chart_of(api_key_project)
    as_variables = {"secrets": {"asFiles": False}}
    created = render(chart, _with_keys(DIGEST_A, **as_variables))
    (name,) = [name for name in _secrets(created) if name.endswith("-api-keys")]
    keys = _secrets(created)[name]
    assert keys["stringData"] == {"API_KEY_HASHES": DIGEST_A}
    assert "annotations" not in keys["metadata"]  # a release object, not a hook: uninstall drops it
    reference = pod_variables(created)["API_KEY_HASHES"]["valueFrom"]["secretKeyRef"]
    assert reference == {"name": name, "key": "API_KEY_HASHES"}
    assert service_settings(api_key_project, created)["api_key_hashes"] == [DIGEST_A]

    existing = merge(
        merge(DATABASE, as_variables),
        {"auth": {"apiKey": {"existingSecret": "keys", "existingSecretKey": "k"}}},
    )
    objects = render(chart, existing)
    assert list(_secrets(objects)) == []  # the database Secret is the user's
    reference = pod_variables(objects)["API_KEY_HASHES"]["valueFrom"]["secretKeyRef"]
    assert reference == {"name": "keys", "key": "k"}


def test_api_key_digests_as_files_join_the_database_url_in_the_secrets_folder(
    api_key_project: Path, tmp_path: Path
) -> None:
    objects = render(
        chart_of(api_key_project), _with_keys(f"{DIGEST_A}, {DIGEST_B}", secrets={"asFiles": True})
    )
    assert not {"API_KEY_HASHES", "DATABASE_URL"} & pod_variables(objects).keys()
    spec = find(objects, "Deployment")["spec"]["template"]["spec"]
    (mount,) = [item for item in spec["containers"][0]["volumeMounts"] if item["name"] == "secrets"]
    assert mount == {"name": "secrets", "mountPath": "/run/secrets", "readOnly": True}
    (volume,) = [item for item in spec["volumes"] if item["name"] == "secrets"]
    # What the kubelet writes into the folder: each item of each source, a file named `path`.
    secrets = {**STORED, **{name: item["stringData"] for name, item in _secrets(objects).items()}}
    for source in volume["projected"]["sources"]:
        data = secrets[source["secret"]["name"]]
        for item in source["secret"]["items"]:
            (tmp_path / item["path"]).write_text(data[item["key"]])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["API_KEY_HASHES", "DATABASE_URL"]
    settings = service_settings(api_key_project, objects, secrets_dir=tmp_path)
    assert settings["api_key_hashes"] == [DIGEST_A, DIGEST_B]
    assert settings["database_url"] == DATABASE_URL


def test_a_new_api_key_secret_changes_the_pod_template_and_so_rolls_the_pods(
    api_key_project: Path,
) -> None:
    chart = chart_of(api_key_project)

    def annotations(values: dict[str, Any]) -> dict[str, str]:
        template = find(render(chart, values), "Deployment")["spec"]["template"]
        return dict(template["metadata"]["annotations"])

    first = annotations(_with_keys(DIGEST_A))
    assert first == annotations(_with_keys(DIGEST_A))
    rotated = annotations(_with_keys(f"{DIGEST_A},{DIGEST_B}"))
    assert rotated["checksum/api-keys"] != first["checksum/api-keys"]
    assert rotated["checksum/secret"] == first["checksum/secret"]  # the database's own
    # An existing Secret is read live by `lookup` at upgrade time; without a cluster it hashes "".
    existing = annotations({"auth": {"apiKey": {"existingSecret": "keys"}}})
    assert len(existing["checksum/api-keys"]) == 64


def test_helm_refuses_api_key_digests_that_are_not_sha256_and_takes_an_escaped_comma_list(
    api_key_project: Path,
) -> None:
    chart = chart_of(api_key_project)
    for wrong in ("my-plain-key", f"{DIGEST_A},{DIGEST_B[:-1]}"):
        with pytest.raises(helm_python.HelmError, match="/auth/apiKey/hashes"):
            render(chart, _with_keys(wrong))
    # docs/deploying.md: --set-string 'auth.apiKey.hashes=<digest>\,<digest>'
    documented = helm_python.parse_set_string(f"auth.apiKey.hashes={DIGEST_A}\\,{DIGEST_B}")
    objects = render(chart, merge(DATABASE, documented))
    assert service_settings(api_key_project, objects)["api_key_hashes"] == [DIGEST_A, DIGEST_B]


def test_the_chart_carries_each_api_key_s_scopes_to_the_service_and_refuses_an_unknown_scope(
    api_key_project: Path,
) -> None:
    chart = chart_of(api_key_project)
    with pytest.raises(helm_python.HelmError, match="/auth/apiKey/hashes"):
        render(chart, _with_keys(f"{DIGEST_A}:admin"))
    # A read-only key beside a key that may do both, given the documented way.
    documented = helm_python.parse_set_string(
        f"auth.apiKey.hashes={DIGEST_A}:read\\,{DIGEST_B}:read\\,write"
    )
    objects = render(chart, merge(DATABASE, documented))
    settings = service_settings(api_key_project, objects)
    assert settings["api_key_hashes"] == [f"{DIGEST_A}:read", f"{DIGEST_B}:read,write"]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("as_files", [False, True], ids=["as-variables", "as-files"])
def test_every_object_of_an_auth_bake_with_every_option_on_lints_and_is_valid(
    api_key_project: Path, jwt_project: Path, as_files: bool, version: str
) -> None:
    everything = merge(EVERYTHING_ON, {"secrets": {"asFiles": as_files}})
    for project, auth in ((api_key_project, "api_key"), (jwt_project, "jwt")):
        chart, values = chart_of(project), merge(everything, AUTH_ON[auth])
        report = helm_python.lint(chart, values, strict=True)
        assert report["errors"] == [], report["messages"]
        for item in render(chart, values):
            validate(item, version)


def test_a_none_bake_has_no_auth_value_and_renders_no_auth_variable(chart: Path) -> None:
    assert "auth" not in yaml.safe_load((chart / "values.yaml").read_text())
    schema = json.loads((chart / "values.schema.json").read_text())
    assert "auth" not in schema["properties"]
    assert "jwks" not in schema["properties"]["networkPolicy"]["properties"]
    assert "auth." not in (chart / "README.md").read_text()
    for values in (None, EVERYTHING_ON, merge(EVERYTHING_ON, {"secrets": {"asFiles": True}})):
        objects = render(chart, values)
        assert not {"API_KEY_HASHES", "JWT_ISSUER", "JWT_JWKS_URL"} & pod_variables(objects).keys()
        annotations = find(objects, "Deployment")["spec"]["template"]["metadata"]["annotations"]
        assert "checksum/api-keys" not in annotations
        assert not [name for name in _secrets(objects) if name.endswith("-api-keys")]


@pytest.mark.parametrize(
    ("auth", "rows"),
    [
        ("api_key", ["auth.apiKey.existingSecret", "auth.apiKey.hashes"]),
        ("jwt", ["auth.jwt.issuer", "auth.jwt.jwksUrl", "networkPolicy.jwks.to"]),
    ],
)
def test_chart_readme_and_deploying_guide_of_an_auth_bake_document_its_values(
    api_key_project: Path, jwt_project: Path, auth: str, rows: list[str]
) -> None:
    project = {"api_key": api_key_project, "jwt": jwt_project}[auth]
    readme = (chart_of(project) / "README.md").read_text()
    documented = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `")}
    assert set(rows) <= documented
    assert f"--set {rows[0]}=" in readme  # the install command names what the install needs
    check = run(project, "python", "deploy/helm/chart_readme.py", "--check")
    assert check.returncode == 0, check.stderr
    guide = (project / "docs" / "deploying.md").read_text()
    assert "## Authentication" in guide
    assert f"`{rows[0]}`" in guide
    assert f"`{rows[-1]}`" in guide


def test_helm_test_of_an_auth_bake_passes_when_the_guard_is_on_and_fails_when_it_is_off(
    api_key_project: Path, default_project: Path, postgres_url: str, tmp_path: Path
) -> None:
    """The release holds only digests, so `helm test` cannot send a key: it checks that the
    service is ready and refuses a read and a write without one."""
    chart = chart_of(api_key_project)
    digest = hashlib.sha256(b"a key no test sends").hexdigest()
    with migrated_database(api_key_project, postgres_url, "helm_test_auth") as url:
        guarded = start_service(
            api_key_project, url, tmp_path / "guarded.log", API_KEY_HASHES=digest
        )
        open_ = start_service(default_project, url, tmp_path / "open.log")
        try:
            passed = run_helm_test(chart, guarded.url)
            failed = run_helm_test(chart, open_.url)  # the same script, no guard in front
        finally:
            for served in (guarded, open_):
                served.process.terminate()
                served.process.wait(timeout=30)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert [line.split(":")[0] for line in passed.stdout.splitlines()] == [
        "ok   GET /readyz",
        "ok   GET /items without credentials",
        "ok   POST /items without credentials",
    ]
    assert failed.returncode == 1
    assert failed.stdout.splitlines()[-1].startswith("FAIL GET /items without credentials")
