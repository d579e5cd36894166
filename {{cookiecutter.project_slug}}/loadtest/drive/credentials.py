"""The credentials of the service `make loadtest` starts itself, and the headers that carry them.
{%- if cookiecutter.auth == "api_key" %}

It accepts the X-API-Key given (loadtest/plan/headers.py), else a random key made for the run: it starts
with API_KEY_HASHES set to that key's digest alone.
{%- elif cookiecutter.auth == "jwt" %}

It verifies the tokens of a local issuer (loadtest/drive/issuer.py), which signs one with both scopes for
the run: each request pays for its token's check as in production, a lookup in the verified-token
cache once the token is known (JWT_CACHE_SIZE=0 in the environment: the signature every time). An
Authorization header given instead (loadtest/plan/headers.py) is sent as it is, and the service then
verifies it against JWT_ISSUER, JWT_AUDIENCE and JWT_JWKS_URL of the environment.
{%- else %}

auth=none: it needs none; the headers given are sent as they are.
{%- endif %}
"""
{% if cookiecutter.auth == "api_key" %}
import secrets
{% elif cookiecutter.auth == "jwt" %}
import os
{% else %}
{% endif -%}
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
{%- if cookiecutter.auth == "api_key" %}

from {{ cookiecutter.package_name }}.kit.auth import HEADER, digest

from ..plan import value_of
{%- elif cookiecutter.auth == "jwt" %}

from {{ cookiecutter.package_name }}.settings import Settings

from ..plan import HeadersError, value_of
from .issuer import Issuer

SETTINGS = ("JWT_ISSUER", "JWT_AUDIENCE", "JWT_JWKS_URL")
TOKEN_SECONDS = 86_400  # the run's token outlives any run
{%- endif %}


@contextmanager
def for_started_service(
    headers: Mapping[str, str],
) -> Iterator[tuple[dict[str, str], dict[str, str]]]:
    """The headers to send to the service the load test starts, and the settings it starts with."""
{%- if cookiecutter.auth == "api_key" %}
    key = value_of(headers, HEADER) or secrets.token_urlsafe(32)
    sent = {name: value for name, value in headers.items() if name.lower() != HEADER.lower()}
    yield {**sent, HEADER: key}, {"API_KEY_HASHES": digest(key)}
{%- elif cookiecutter.auth == "jwt" %}
    if value_of(headers, "Authorization") is not None:
        missing = [name for name in SETTINGS if not os.environ.get(name)]
        if missing:
            raise HeadersError(
                "an Authorization header is given, so the service started here verifies it "
                f"against the environment's settings, which lack {', '.join(missing)}: set them, "
                "or give no Authorization header and the load test signs a token of its own"
            )
        yield dict(headers), {}
        return
    scopes = [Settings.model_fields[name].default for name in ("jwt_read_scope", "jwt_write_scope")]
    with Issuer() as issuer:
        token = issuer.token(scope=" ".join(scopes), lifetime=TOKEN_SECONDS)
        settings = {name.upper(): str(value) for name, value in issuer.settings().items()}
        yield {**headers, "Authorization": f"Bearer {token}"}, settings
{%- else %}
    yield dict(headers), {}
{%- endif %}
