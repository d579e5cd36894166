"""Make the OpenAPI document say what errors really look like: problem+json, every status.

FastAPI documents only its own 422 shape, as application/json. The service answers every error as
application/problem+json and can also answer 400 (bad JSON, bad If-Match), 413 (body limit),
415 (not JSON) and 503 (database unavailable, pool or concurrency limit). Clients and schema
fuzzers (schemathesis) check responses against this document, so it lists them all.
"""

from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from .numbers import INT64_MAX, INT64_MIN, JSON_EXACT_INTEGER

_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_PROBLEM_CONTENT = {"application/problem+json": {"schema": _PROBLEM_REF}}
PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "RFC 9457 problem details.",
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "description": "Each invalid field, for 400 and 422.",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "location": {"type": "array", "items": {"type": "string"}},
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                },
            },
        },
    },
}
_WITH_BODY = {
    "400": "The body is not valid JSON or UTF-8, or a header is malformed",
    "413": "The body exceeds MAX_BODY_BYTES",
    "415": "The body is not JSON",
}
_ALWAYS = {
    "503": "The database is unavailable or saturated, or the server is at its concurrency "
    "limit; see Retry-After",
}
_SECURED = {"401": "No credentials, or invalid ones; see WWW-Authenticate"}
_SCOPED = {"403": "The credentials lack the scope this operation needs"}
_ETAG = {
    "ETag": {
        "description": 'The version of the row, quoted ("3"): send it back in If-Match or '
        "If-None-Match.",
        "schema": {"type": "string"},
    }
}
_UNSENT_DEFAULTS = {"after"}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "string"}}}


def _integer_bound(value: float) -> int | float:
    if value.is_integer() and abs(value) <= JSON_EXACT_INTEGER:
        return int(value)
    if abs(value) == -INT64_MIN:
        # float(2**63 - 1) rounds up to 2**63: it stood for the bigint bound, not one past it.
        return INT64_MAX if value > 0 else INT64_MIN
    return value


def _exact_integer_bounds(node: Any) -> None:
    # FastAPI's OpenAPI model holds minimum/maximum as floats: 0 becomes 0.0 and 2**63 - 1 becomes
    # 9.223372036854776e18, a bound one past what the service accepts. Integers go back to integers.
    if isinstance(node, dict):
        if node.get("type") == "integer":
            for key in ("minimum", "maximum"):
                if isinstance(node.get(key), float):
                    node[key] = _integer_bound(node[key])
        for value in node.values():
            _exact_integer_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _exact_integer_bounds(value)


def _without_null(parameter: dict[str, Any]) -> None:
    # An optional parameter is one that may be absent (required: false). FastAPI also writes
    # `anyOf: [..., {"type": "null"}]`, which a client takes as "send the text null".
    choices = parameter.get("schema", {}).get("anyOf")
    if choices is None:
        return
    kept = [choice for choice in choices if choice.get("type") != "null"]
    if len(kept) == 1:
        del parameter["schema"]["anyOf"]
        parameter["schema"].update(kept[0])


def _without_unsent_default(parameter: dict[str, Any]) -> None:
    # A generated client sends every default it is told of, and ?after= beside ?sort= is refused
    # (400, kit/keyset.py): the document leaves after's default out (absent, it is 0 all the same).
    if parameter.get("in") == "query" and parameter.get("name") in _UNSENT_DEFAULTS:
        parameter.get("schema", {}).pop("default", None)


def _header_as_text(parameter: dict[str, Any]) -> None:
    # A header is one line of text: `"3", "4"` is one If-Match value. FastAPI writes a list[str]
    # header as an array, which openapi-python-client refuses (the operation is left out) and
    # other generators send as repeated headers. The item's pattern already allows the list.
    schema = parameter.get("schema", {})
    if parameter.get("in") != "header" or schema.get("type") != "array":
        return
    del schema["type"]
    schema.update(schema.pop("items"))
    if "examples" in schema:
        schema["examples"] = [", ".join(example) for example in schema["examples"]]


def _is_row(response: dict[str, Any], schemas: dict[str, Any]) -> bool:
    # A row model (kit/models.py: id and version in every answer) is answered by row_response,
    # which always sets the ETag; a page of rows has no ETag of its own.
    reference = response.get("content", {}).get("application/json", {}).get("schema", {})
    name = reference.get("$ref", "").rpartition("/")[2]
    return {"id", "version"} <= set(schemas.get(name, {}).get("required", ()))


def _document(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    for parameter in operation.get("parameters", []):
        _without_null(parameter)
        _header_as_text(parameter)
        _without_unsent_default(parameter)
    responses: dict[str, Any] = operation.setdefault("responses", {})
    added = {**_ALWAYS}
    if "requestBody" in operation or any(
        p.get("in") == "header" for p in operation.get("parameters", [])
    ):
        added = {**_WITH_BODY, **added}
    for requirement in operation.get("security", []):
        added = {**_SECURED, **(_SCOPED if any(requirement.values()) else {}), **added}
    for status, description in added.items():
        responses.setdefault(status, {"description": description})
    for status, response in responses.items():
        if status.isdigit() and int(status) >= 400:
            response["content"] = _PROBLEM_CONTENT
    responses["503"]["headers"] = _RETRY_AFTER
    for status, response in responses.items():
        if status == "304" or (status.startswith("2") and _is_row(response, schemas)):
            response["headers"] = _ETAG


def with_problems(schema: dict[str, Any]) -> dict[str, Any]:
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            _document(operation, schemas)
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas["Problem"] = PROBLEM_SCHEMA
    _exact_integer_bounds(schema)
    return schema


def operation_id(route: APIRoute) -> str:
    """The route's function name (`create_item`): what generated clients call the operation.

    FastAPI's default joins name, path and method (`create_item_items_post`); the names of a
    resource's functions are unique across the service already (they carry the resource's name).
    """
    return route.name


def document_problems(app: FastAPI) -> None:
    """Post-process the app's OpenAPI document once, when it is first generated."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = with_problems(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
