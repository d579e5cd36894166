"""Who is calling: the identity a client's records are kept under (idempotency keys).
{% if cookiecutter.auth == "api_key" %}
auth=api_key: the SHA-256 digest of the caller's API key (never the key itself), so a retry must
come with the same key; a rotated key is a new client.
{%- elif cookiecutter.auth == "jwt" %}
auth=jwt: the token's subject (`sub`), so a retry with a refreshed token is the same client; a
token without one is known by its digest until it expires.
{%- else %}
auth=none: every caller is the one client "anonymous": the clients of the service share one space
of idempotency keys, so each must send keys no other would (UUIDs).
{%- endif %}

Called only after the route's guard (READ or WRITE) let the request in, and only by what needs
it: a request without an Idempotency-Key pays nothing here.
"""
{%- if cookiecutter.auth == "jwt" %}

import hashlib
{%- endif %}

from starlette.requests import Request
{%- if cookiecutter.auth == "api_key" %}

from .auth import HEADER, digest, key_of
{%- elif cookiecutter.auth == "jwt" %}

from .auth import token_of
from .state import service_state
{%- endif %}


async def client_identity(request: Request) -> str:
{%- if cookiecutter.auth == "api_key" %}
    return "key:" + digest(key_of(request.headers.get(HEADER)) or "")
{%- elif cookiecutter.auth == "jwt" %}
    token = token_of(request.headers.get("authorization")) or ""
    # Verified by the route's guard already: this is the verifier's cache, not a signature check.
    claims = await service_state(request).token_verifier.verify(token)
    subject = claims.get("sub")
    if isinstance(subject, str) and subject:
        return "sub:" + subject
    return "token:" + hashlib.sha256(token.encode()).hexdigest()
{%- else %}
    return "anonymous"
{%- endif %}
