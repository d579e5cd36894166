{% if cookiecutter.auth == "none" -%}
"""`helm test`: /readyz, then one create-read-delete round trip of {{ cookiecutter.__resource_article }} {{ cookiecutter.resource }}.
{%- else -%}
"""`helm test`: /readyz, then the {{ cookiecutter.resource_plural }} refuse a read and a write that carry no credentials.

The release holds no credential a test could send ({% if cookiecutter.auth == "api_key" %}only digests of the API keys{% else %}only the issuer's address{% endif %}), so the
test checks what a wrong auth configuration would break: that the guard is on.
{%- endif %}

Runs in the service's own image (standard library only) against BASE_URL, the Service. Prints
each step; exits 1 naming the first step that failed.
"""

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

BASE_URL = os.environ.get("BASE_URL", "http://127.0.0.1:8000").rstrip("/")
COLLECTION = "/{{ cookiecutter.resource_plural }}"
TIMEOUT_SECONDS = 5.0


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
    try:
        expect("GET /readyz", call("GET", "/readyz")[0], 200)
{%- if cookiecutter.auth != "none" %}
        expect(f"GET {COLLECTION} without credentials", call("GET", COLLECTION)[0], 401)
        body = {"name": "helm test", "price_cents": 1}
        expect(f"POST {COLLECTION} without credentials", call("POST", COLLECTION, body)[0], 401)
{%- else %}
        status, created = call("POST", COLLECTION, {"name": "helm test", "price_cents": 1})
        expect(f"POST {COLLECTION}", status, 201)
        path = f"{COLLECTION}/{created['id']}"
        status, read = call("GET", path)
        expect(f"GET {path}", status, 200)
        if read["name"] != "helm test":
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
