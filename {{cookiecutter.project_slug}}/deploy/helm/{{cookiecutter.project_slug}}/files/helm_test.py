{% if cookiecutter.auth == "none" -%}
"""`helm test`: /readyz, then one create-read-delete round trip of a row of the first resource.
{%- else -%}
"""`helm test`: /readyz, then the first resource refuses a read and a write that carry no credentials.

The release holds no credential a test could send ({% if cookiecutter.auth == "api_key" %}only digests of the API keys{% else %}only the issuer's address{% endif %}), so the
test checks what a wrong auth configuration would break: that the guard is on.
{%- endif %}

Runs in the service's own image against BASE_URL, the Service: the standard library, and the
service's package for the first resource of serving/resources.py (its path, and a create body of
its fields' examples, built from its declaration as the OpenAPI document's examples are; the
release serves no OpenAPI document). Run from a checkout, it finds the package in src/. Prints each
step; exits 1 naming the first step that failed.
"""

import json
import os
import sys
import typing
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

BASE_URL = os.environ.get("BASE_URL", "http://127.0.0.1:8000").rstrip("/")
TIMEOUT_SECONDS = 5.0
# Run as a file of a checkout (deploy/helm/<chart>/files/): the package's source is in src/.
_SCRIPT = globals().get("__file__")
if _SCRIPT is not None:
    sys.path.append(str(Path(_SCRIPT).resolve().parents[4] / "src"))


def first_resource() -> tuple[str, dict[str, Any]]:
    """The first resource's collection path and a valid create body: each field's example, a
    fresh value where the field is unique (a run that failed may have left its row behind)."""
    from {{ cookiecutter.package_name }}.kit import field_type, is_unique
    from {{ cookiecutter.package_name }}.serving.resources import RESOURCES

    resource = RESOURCES[0]
    body = {}
    for name, info in resource.fields.model_fields.items():
        marker = field_type(info.metadata)
        assert marker is not None, f"{name} is declared without a kit field type"
        value = marker.example
        if marker.kind == "enum":  # an enum's example is None: its Literal's first value instead
            value = _first_choice(info.annotation)
        elif is_unique(info.metadata) and marker.kind == "uuid":
            value = str(uuid.uuid4())
        elif is_unique(info.metadata) and marker.kind in ("str", "text"):
            value = f"{value}-{uuid.uuid4().hex}"[-marker.max_length :]  # type: ignore[attr-defined]
        body[name] = value
    return resource.prefix, body


def _first_choice(annotation: Any) -> Any:
    """The first value of the Literal[...] in an enum field's type (`Literal[...] | None` too)."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)[0]
    choices = [_first_choice(arg) for arg in typing.get_args(annotation) if arg is not type(None)]
    return next((choice for choice in choices if choice is not None), None)


def call(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """One request; the status and the decoded JSON body (None when there is none)."""
    url = BASE_URL + path
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"BASE_URL must be an http(s) URL, not {BASE_URL!r}")
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 (scheme checked)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    return status, json.loads(raw) if raw else None


def expect(step: str, status: int, wanted: int) -> None:
    if status != wanted:
        print(f"FAIL {step}: status {status}, expected {wanted}")
        sys.exit(1)
    print(f"ok   {step}: {status}")


def main() -> int:
    collection, body = first_resource()
    try:
        expect("GET /readyz", call("GET", "/readyz")[0], 200)
{%- if cookiecutter.auth != "none" %}
        expect(f"GET {collection} without credentials", call("GET", collection)[0], 401)
        expect(f"POST {collection} without credentials", call("POST", collection, body)[0], 401)
{%- else %}
        status, created = call("POST", collection, body)
        expect(f"POST {collection}", status, 201)
        path = f"{collection}/{created['id']}"
        status, read = call("GET", path)
        expect(f"GET {path}", status, 200)
        if read != created:
            print(f"FAIL GET {path}: read back {read!r}")
            return 1
        expect(f"DELETE {path}", call("DELETE", path)[0], 204)
        expect(f"GET {path} after DELETE", call("GET", path)[0], 404)
{%- endif %}
    except OSError as error:  # refused, reset, timed out, name not resolved
        print(f"FAIL {BASE_URL}: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
