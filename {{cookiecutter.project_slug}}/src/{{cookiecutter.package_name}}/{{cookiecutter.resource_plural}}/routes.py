"""HTTP edge of {{ cookiecutter.resource_plural }}: parse, call the repository, encode; never SQL here."""

from typing import Any

from fastapi import Response

from ..kit import (
    READ,
    WRITE,
    DatabaseDep,
    IfMatch,
    IfNoneMatch,
    JSONBytesResponse,
    ProblemError,
    Record,
    SettingsDep,
    etag,
    none_match,
    resource_router,
    stale,
    versions_matching,
)
from . import repository
from .schemas import (
    {{ cookiecutter.__resource_class }},
    {{ cookiecutter.__resource_class }}Create,
    {{ cookiecutter.__resource_class }}Id,
    {{ cookiecutter.__resource_class }}Page,
    {{ cookiecutter.__resource_class }}Update,
    PageAfter,
    PageLimit,
)

PREFIX = "/{{ cookiecutter.resource_plural }}"
# Every route of this router runs its declaration without FastAPI's general per-request
# bookkeeping, dependencies included (kit/routing.py).
router = resource_router(PREFIX, tags=["{{ cookiecutter.resource_plural }}"])

_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such {{ cookiecutter.resource }}"}}
_KEYSET_GUARANTEE = """Pages are in id order; pass `next_after` as `after` for the next one.

**What holds:** a walk from `after=0` to `next_after: null` returns every {{ cookiecutter.resource }} that
existed before the walk started and still exists when its page is read, exactly once, and never
returns {{ cookiecutter.__resource_article }} {{ cookiecutter.resource }} twice.

**Known limit:** ids are handed out when an insert starts, and inserts commit in any order. A
{{ cookiecutter.resource }} created during the walk whose insert commits after a page with a higher id was already
read is skipped by this walk (the next walk sees it)."""
_CONDITIONAL: dict[int | str, dict[str, Any]] = {
    412: {"description": "If-Match names no current version"},
    428: {"description": "If-Match is missing and REQUIRE_IF_MATCH is on"},
}


def _encode(record: Record) -> bytes:
    # The response_model documents the shape (OpenAPI); the body was built by PostgreSQL (sql.py).
    body: str = record["body"]
    return body.encode()


def _etag(record: Record) -> str:
    return etag(record["version"])


def _not_found({{ cookiecutter.resource }}_id: int) -> ProblemError:
    return ProblemError(404, f"{{ cookiecutter.__resource_class }} {{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }} does not exist.")


@router.post(
    "",
    status_code=201,
    response_model={{ cookiecutter.__resource_class }},
    summary="Create {{ cookiecutter.__resource_article }} {{ cookiecutter.resource }}",
    dependencies=WRITE,
)
async def create_{{ cookiecutter.resource }}(body: {{ cookiecutter.__resource_class }}Create, database: DatabaseDep) -> Response:
    async with database.connection() as connection:
        record = await repository.create_{{ cookiecutter.resource }}(connection, new=body)
    headers = {"Location": f"{PREFIX}/{record['id']}", "ETag": _etag(record)}
    return JSONBytesResponse(_encode(record), status_code=201, headers=headers)


@router.get(
    "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}",
    response_model={{ cookiecutter.__resource_class }},
    responses={**_NOT_FOUND, 304: {"description": "If-None-Match names the current ETag"}},
    summary="Get {{ cookiecutter.__resource_article }} {{ cookiecutter.resource }} by id",
    dependencies=READ,
)
async def get_{{ cookiecutter.resource }}(
    {{ cookiecutter.resource }}_id: {{ cookiecutter.__resource_class }}Id, database: DatabaseDep, if_none_match: IfNoneMatch = None
) -> Response:
    async with database.connection() as connection:
        record = await repository.get_{{ cookiecutter.resource }}(connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id)
    if record is None:
        raise _not_found({{ cookiecutter.resource }}_id)
    current = _etag(record)
    if not none_match(if_none_match, current):
        return Response(status_code=304, headers={"ETag": current})
    return JSONBytesResponse(_encode(record), headers={"ETag": current})


@router.get(
    "",
    response_model={{ cookiecutter.__resource_class }}Page,
    summary="List {{ cookiecutter.resource_plural }} by id, one keyset page at a time",
    description=_KEYSET_GUARANTEE,
    dependencies=READ,
)
async def list_{{ cookiecutter.resource_plural }}(
    database: DatabaseDep,
    limit: PageLimit = 20,
    after: PageAfter = 0,
) -> Response:
    async with database.connection() as connection:
        page = await repository.list_{{ cookiecutter.resource_plural }}(connection, after=after, limit=limit)
    return JSONBytesResponse(page.encode())


@router.patch(
    "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}",
    response_model={{ cookiecutter.__resource_class }},
    responses={**_NOT_FOUND, **_CONDITIONAL},
    summary="Update some fields of {{ cookiecutter.__resource_article }} {{ cookiecutter.resource }}",
    dependencies=WRITE,
)
async def update_{{ cookiecutter.resource }}(
    {{ cookiecutter.resource }}_id: {{ cookiecutter.__resource_class }}Id,
    body: {{ cookiecutter.__resource_class }}Update,
    database: DatabaseDep,
    settings: SettingsDep,
    if_match: IfMatch = None,
) -> Response:
    expected = versions_matching(if_match, required=settings.require_if_match)
    async with database.connection() as connection:
        record = await repository.update_{{ cookiecutter.resource }}(
            connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id, changes=body, expected_versions=expected
        )
        if record is None:
            current = await repository.get_{{ cookiecutter.resource }}_version(connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id)
    if record is None:
        if current is None:
            raise _not_found({{ cookiecutter.resource }}_id)
        raise stale(current)
    return JSONBytesResponse(_encode(record), headers={"ETag": _etag(record)})


@router.delete(
    "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}",
    status_code=204,
    responses={**_NOT_FOUND, **_CONDITIONAL},
    summary="Delete {{ cookiecutter.__resource_article }} {{ cookiecutter.resource }}",
    dependencies=WRITE,
)
async def delete_{{ cookiecutter.resource }}(
    {{ cookiecutter.resource }}_id: {{ cookiecutter.__resource_class }}Id,
    database: DatabaseDep,
    settings: SettingsDep,
    if_match: IfMatch = None,
) -> Response:
    expected = versions_matching(if_match, required=settings.require_if_match)
    async with database.connection() as connection:
        deleted = await repository.delete_{{ cookiecutter.resource }}(
            connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id, expected_versions=expected
        )
        if not deleted:
            current = await repository.get_{{ cookiecutter.resource }}_version(connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id)
    if not deleted:
        if current is None:
            raise _not_found({{ cookiecutter.resource }}_id)
        raise stale(current)
    return Response(status_code=204)
