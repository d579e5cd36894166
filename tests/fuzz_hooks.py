"""Schemathesis hooks for tests/test_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

One correction, nothing else: schemathesis' coverage phase builds header values from letters and
digits only, so it cannot write an ETag (every ETag has quotes) and sends `If-Match: 0` labelled as
schema-valid. The document's pattern refuses it, and so does the service (400). Such a
"schema-valid request rejected" is dropped only when the header really breaks the declared pattern.
And a list cursor is opaque: any string fits its schema, but only one the service signed is read
(400 naming `cursor`), as `after` with `sort` is a 400 naming `after`; a fuzzer cannot make a
cursor, so that 400 is dropped too. And the fuzzer sends one Idempotency-Key with many bodies:
a key once used answers another request with a 422 (it names the key, not a field), which is the
contract, so that 422 is dropped as well. And JSON Schema counts a whole number written with a
fraction (`4466.0`) as an integer, while the service refuses it (422 naming the field: a number
written with a fraction need not be the integer its float is), so that 422 is dropped too. Every
other failure, of every check, stands.
"""

import re
from typing import Any

import schemathesis
from inventory_service.kit.conditional import IF_MATCH_PATTERN, IF_NONE_MATCH_PATTERN

_DECLARED = {"if-match": IF_MATCH_PATTERN, "if-none-match": IF_NONE_MATCH_PATTERN}


def _breaks_declared_pattern(headers: dict[str, Any] | None) -> bool:
    for name, value in (headers or {}).items():
        pattern = _DECLARED.get(name.lower())
        if pattern is not None and isinstance(value, str) and re.fullmatch(pattern, value) is None:
            return True
    return False


def _refused_cursor(case: Any, response: Any) -> bool:
    query = case.query or {}
    if (
        response is None
        or response.status_code != 400
        or not ("cursor" in query or "after" in query)
    ):
        return False
    detail = str(response.json().get("detail", ""))
    return detail.startswith(("cursor:", "after:"))


def _reused_idempotency_key(case: Any, response: Any) -> bool:
    sent = {name.lower() for name in (case.headers or {})}
    if response is None or response.status_code != 422 or "idempotency-key" not in sent:
        return False
    return "Idempotency-Key was used with another request" in str(response.json().get("detail"))


def _whole_float_for_an_integer(case: Any, response: Any) -> bool:
    body = case.body if isinstance(case.body, dict) else {}
    floats = {name for name, value in body.items() if isinstance(value, float)}
    if response is None or response.status_code != 422 or not floats:
        return False
    named = {error.get("field") for error in response.json().get("errors", [])}
    return bool(named) and named <= floats


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    return not (
        getattr(failure, "code", None) == "ST202"
        and (
            _breaks_declared_pattern(case.headers)
            or _refused_cursor(case, response)
            or _reused_idempotency_key(case, response)
            or _whole_float_for_an_integer(case, response)
        )
    )
