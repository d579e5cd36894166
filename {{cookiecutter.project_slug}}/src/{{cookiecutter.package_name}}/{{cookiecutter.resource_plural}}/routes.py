"""HTTP edge of {{ cookiecutter.resource_plural }}: parse, call the repository, encode; never SQL here."""

import re
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query, Request, Response

{%- if cookiecutter.auth != "none" %}
from ..auth import READ, WRITE
{%- endif %}
from ..db import Database, Record
from ..errors import ProblemError
from ..responses import JSONBytesResponse
from ..routing import FastRoute
from . import repository
from .schemas import (
    INT64_MAX,
    {{ cookiecutter.__resource_class }},
    {{ cookiecutter.__resource_class }}Create,
    {{ cookiecutter.__resource_class }}Page,
    {{ cookiecutter.__resource_class }}Update,
)

PREFIX = "/{{ cookiecutter.resource_plural }}"
# FastRoute: every route of this router runs its declaration without FastAPI's general per-request
# bookkeeping, dependencies included (routing.py; bench: docs/performance.md).
router = APIRouter(prefix=PREFIX, tags=["{{ cookiecutter.resource_plural }}"], route_class=FastRoute)

{{ cookiecutter.__resource_class }}Id = Annotated[int, Path(ge=1, le=INT64_MAX, description="The {{ cookiecutter.resource }} id.")]
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such {{ cookiecutter.resource }}"}}
_ETAG = re.compile(r'^(?:W/)?"(\d{1,10})"$')


def _db(request: Request) -> Database:
    database: Database = request.app.state.db
    return database


def _encode(record: Record) -> bytes:
    # The response_model documents the shape (OpenAPI); the body was built by PostgreSQL (sql.py).
    body: str = record["body"]
    return body.encode()


def _etag(record: Record) -> str:
    return f'"{record["version"]}"'


def _not_found({{ cookiecutter.resource }}_id: int) -> ProblemError:
    return ProblemError(404, f"{{ cookiecutter.__resource_class }} {{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }} does not exist.")


def _parse_if_match(value: str | None) -> int | None:
    """The version an If-Match header demands, None for no condition (absent or `*`)."""
    if value is None or value.strip() == "*":
        return None
    match = _ETAG.match(value.strip())
    if match is None:
        raise ProblemError(400, 'If-Match must be an ETag of this API, e.g. "3", or *.')
    return int(match.group(1))


@router.post(
    "",
    status_code=201,
    response_model={{ cookiecutter.__resource_class }},
    summary="Create a {{ cookiecutter.resource }}",
{%- if cookiecutter.auth != "none" %}
    dependencies=WRITE,
{%- endif %}
)
async def create_{{ cookiecutter.resource }}(body: {{ cookiecutter.__resource_class }}Create, request: Request) -> Response:
    async with _db(request).connection() as connection:
        record = await repository.create_{{ cookiecutter.resource }}(connection, new=body)
    headers = {"Location": f"{PREFIX}/{record['id']}", "ETag": _etag(record)}
    return JSONBytesResponse(_encode(record), status_code=201, headers=headers)


@router.get(
    "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}",
    response_model={{ cookiecutter.__resource_class }},
    responses=_NOT_FOUND,
    summary="Get a {{ cookiecutter.resource }} by id",
{%- if cookiecutter.auth != "none" %}
    dependencies=READ,
{%- endif %}
)
async def get_{{ cookiecutter.resource }}({{ cookiecutter.resource }}_id: {{ cookiecutter.__resource_class }}Id, request: Request) -> Response:
    async with _db(request).connection() as connection:
        record = await repository.get_{{ cookiecutter.resource }}(connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id)
    if record is None:
        raise _not_found({{ cookiecutter.resource }}_id)
    return JSONBytesResponse(_encode(record), headers={"ETag": _etag(record)})


@router.get(
    "",
    response_model={{ cookiecutter.__resource_class }}Page,
    summary="List {{ cookiecutter.resource_plural }} by id, one keyset page at a time",
{%- if cookiecutter.auth != "none" %}
    dependencies=READ,
{%- endif %}
)
async def list_{{ cookiecutter.resource_plural }}(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500, description="Page size.")] = 20,
    after: Annotated[int, Query(ge=0, le=INT64_MAX, description="Last id of the previous page.")] = 0,
) -> Response:
    async with _db(request).connection() as connection:
        page = await repository.list_{{ cookiecutter.resource_plural }}(connection, after=after, limit=limit)
    return JSONBytesResponse(page.encode())


@router.patch(
    "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}",
    response_model={{ cookiecutter.__resource_class }},
    responses={**_NOT_FOUND, 412: {"description": "If-Match names a stale version"}},
    summary="Update some fields of a {{ cookiecutter.resource }}",
{%- if cookiecutter.auth != "none" %}
    dependencies=WRITE,
{%- endif %}
)
async def update_{{ cookiecutter.resource }}(
    {{ cookiecutter.resource }}_id: {{ cookiecutter.__resource_class }}Id,
    body: {{ cookiecutter.__resource_class }}Update,
    request: Request,
    if_match: Annotated[str | None, Header(description='Version ETag, e.g. "3".')] = None,
) -> Response:
    expected_version = _parse_if_match(if_match)
    async with _db(request).connection() as connection:
        record = await repository.update_{{ cookiecutter.resource }}(
            connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id, changes=body, expected_version=expected_version
        )
        if record is None:
            current = await repository.get_{{ cookiecutter.resource }}_version(connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id)
    if record is None:
        if current is None:
            raise _not_found({{ cookiecutter.resource }}_id)
        raise ProblemError(
            412, f'If-Match "{expected_version}" is stale: the current version is "{current}".'
        )
    return JSONBytesResponse(_encode(record), headers={"ETag": _etag(record)})


@router.delete(
    "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}",
    status_code=204,
    responses=_NOT_FOUND,
    summary="Delete a {{ cookiecutter.resource }}",
{%- if cookiecutter.auth != "none" %}
    dependencies=WRITE,
{%- endif %}
)
async def delete_{{ cookiecutter.resource }}({{ cookiecutter.resource }}_id: {{ cookiecutter.__resource_class }}Id, request: Request) -> Response:
    async with _db(request).connection() as connection:
        deleted = await repository.delete_{{ cookiecutter.resource }}(connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id)
    if not deleted:
        raise _not_found({{ cookiecutter.resource }}_id)
    return Response(status_code=204)
