"""The chart of an auth=jwt bake passes the issuer, audience, JWKS URL and scopes as variables,
refuses an install the service could not start with, and lets the pods out to the issuer."""

import itertools
from pathlib import Path
from typing import Any

import helm_python
import pytest

from .baking import run
from .charting import (
    AUTH_ON,
    DATABASE,
    EVERYTHING_ON,
    chart_of,
    merge,
    pod_variables,
    render,
    service_settings,
)

ISSUER: dict[str, str] = AUTH_ON["jwt"]["auth"]["jwt"]
JWT = {"auth": {"jwt": ISSUER}}
EVERYWHERE = AUTH_ON["jwt"]["networkPolicy"]["jwks"]["to"]


def test_a_jwt_bake_passes_the_issuer_audience_jwks_url_and_scopes_as_variables(
    jwt_project: Path,
) -> None:
    chart = chart_of(jwt_project)
    objects = render(chart, merge(DATABASE, JWT))
    variables = {name: item.get("value") for name, item in pod_variables(objects).items()}
    assert (
        variables.items()
        >= {
            "JWT_ISSUER": ISSUER["issuer"],
            "JWT_AUDIENCE": ISSUER["audience"],
            "JWT_JWKS_URL": ISSUER["jwksUrl"],
            "JWT_READ_SCOPE": "items:read",
            "JWT_WRITE_SCOPE": "items:write",
        }.items()
    )
    settings = service_settings(jwt_project, objects)
    assert (settings["app_env"], settings["jwt_issuer"]) == ("prod", ISSUER["issuer"])
    scopes = {"auth": {"jwt": {"readScope": "shop.read", "writeScope": "shop.write"}}}
    scoped = service_settings(jwt_project, render(chart, merge(merge(DATABASE, JWT), scopes)))
    assert (scoped["jwt_read_scope"], scoped["jwt_write_scope"]) == ("shop.read", "shop.write")


@pytest.mark.parametrize(
    ("jwt", "message"),
    [
        ({}, "/auth/jwt/issuer"),  # values.yaml leaves all three empty
        ({**ISSUER, "issuer": ""}, "/auth/jwt/issuer"),
        ({**ISSUER, "audience": ""}, "/auth/jwt/audience"),
        ({**ISSUER, "jwksUrl": "http://login.example.com/certs"}, "/auth/jwt/jwksUrl"),
        ({**ISSUER, "jwksUrl": "login.example.com/certs"}, "/auth/jwt/jwksUrl"),
    ],
    ids=["defaults", "no-issuer", "no-audience", "http-jwks", "no-scheme"],
)
def test_helm_refuses_a_jwt_install_the_service_could_not_start_with(
    jwt_project: Path, jwt: dict[str, str], message: str
) -> None:
    with pytest.raises(helm_python.HelmError, match=message):
        render(chart_of(jwt_project), {"auth": {"jwt": jwt}})


def test_network_policy_of_a_jwt_bake_lets_the_pods_out_to_the_issuer_on_the_jwks_port(
    jwt_project: Path,
) -> None:
    chart = chart_of(jwt_project)
    on = merge(EVERYTHING_ON, AUTH_ON["jwt"])
    service, migrate = (item for item in render(chart, on) if item["kind"] == "NetworkPolicy")
    issuer = {"to": EVERYWHERE, "ports": [{"port": 443, "protocol": "TCP"}]}
    assert issuer in service["spec"]["egress"]
    assert issuer not in migrate["spec"]["egress"]  # alembic needs the database only
    port = {"auth": {"jwt": {"jwksUrl": "https://[fd00::1]:8443/certs"}}}
    objects = render(chart, merge(on, port))
    egress = next(item for item in objects if item["kind"] == "NetworkPolicy")["spec"]["egress"]
    assert {"to": EVERYWHERE, "ports": [{"port": 8443, "protocol": "TCP"}]} in egress
    with pytest.raises(helm_python.HelmError, match="/networkPolicy/jwks"):
        render(chart, merge(EVERYTHING_ON, JWT))


def test_make_helm_lint_of_a_jwt_bake_lints_with_the_values_the_schema_requires(
    jwt_project: Path,
) -> None:
    result = run(jwt_project, "make", "--no-print-directory", "-n", "helm-lint", "HELM=helm")
    assert result.returncode == 0, result.stderr
    words = result.stdout.splitlines()[0].split()
    assert words[:3] == ["helm", "lint", "--strict"]
    values: dict[str, Any] = {}
    for flag, expression in itertools.pairwise(words):
        if flag == "--set":
            values = merge(values, helm_python.parse_set_string(expression))
    chart = chart_of(jwt_project)
    assert helm_python.lint(chart, values, strict=True)["errors"] == []
    assert (
        pod_variables(render(chart, values))["JWT_ISSUER"]["value"] == "https://issuer.example.com/"
    )
