"""The headers every load request carries: given once (LOADTEST_HEADERS, --header), checked,
never shown; and the credentials of the service the load test starts, which that service takes."""
{% if cookiecutter.auth == "api_key" %}
import hashlib
{% else %}
{% endif -%}
from typing import Any

import pytest
from loadtest.drive.credentials import for_started_service
from loadtest.plan.headers import ENVIRONMENT, HeadersError, environment, given, parse

from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ...conftest import BASE, started
from ...declared import new_body

SECRET = "s3cret-value-of-the-test"


def test_headers_come_from_the_environment_then_the_options_the_last_of_a_name_winning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENVIRONMENT, f"X-API-Key: {SECRET}\n\nX-Trace: a\n")
    headers = given(["x-trace: b", "Accept: */*"])
    assert headers == {"X-API-Key": SECRET, "x-trace": "b", "Accept": "*/*"}


@pytest.mark.parametrize(
    "line",
    [f"X-API-Key {SECRET}", f"X API Key: {SECRET}", "X-API-Key:", f"X-API-Key: {SECRET}\rX-B: 1"],
    ids=["no colon", "name not a token", "no value", "line break in the value"],
)
def test_a_header_that_is_not_one_name_value_line_is_refused_without_being_shown(
    line: str,
) -> None:
    with pytest.raises(HeadersError) as refused:
        parse([line])
    assert SECRET not in str(refused.value)


def test_k6_and_wrk_get_the_headers_in_their_environment_one_per_line() -> None:
    headers = {"X-API-Key": SECRET, "X-Trace": "a"}
    assert environment(headers)[ENVIRONMENT] == f"X-API-Key: {SECRET}\nX-Trace: a\n"
    assert parse(environment(headers)[ENVIRONMENT].splitlines()) == headers


async def test_the_service_started_with_the_load_tests_settings_takes_its_headers(
    database_url: str,
) -> None:
    with for_started_service({"X-Trace": "a"}) as (headers, settings):
        assert headers["X-Trace"] == "a"
        fields: dict[str, Any] = {name.lower(): value for name, value in settings.items()}
        app = create_app(Settings(database_url=database_url, app_env="prod", **fields))
        async with started(app, headers) as client:
            response = await client.post(BASE, json=new_body())
            assert response.status_code == 201, response.text
            assert (await client.get(f"{BASE}/{response.json()['id']}")).status_code == 200
{%- if cookiecutter.auth == "api_key" %}


def test_the_started_service_accepts_the_api_key_given_and_only_it() -> None:
    with for_started_service({"x-api-key": SECRET}) as (headers, settings):
        assert headers == {"X-API-Key": SECRET}
        assert settings == {"API_KEY_HASHES": hashlib.sha256(SECRET.encode()).hexdigest()}


def test_without_an_api_key_the_started_service_gets_a_random_one_per_run() -> None:
    with for_started_service({}) as (first, _), for_started_service({}) as (second, _):
        assert len(first["X-API-Key"]) >= 32
        assert first["X-API-Key"] != second["X-API-Key"]
{%- elif cookiecutter.auth == "jwt" %}


def test_an_authorization_header_given_needs_the_jwt_settings_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("JWT_ISSUER", "JWT_AUDIENCE", "JWT_JWKS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JWT_AUDIENCE", "{{ cookiecutter.project_slug }}")
    with (
        pytest.raises(HeadersError, match="lack JWT_ISSUER, JWT_JWKS_URL:") as refused,
        for_started_service({"Authorization": f"Bearer {SECRET}"}),
    ):
        pass
    assert SECRET not in str(refused.value)
{%- endif %}
