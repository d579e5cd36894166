"""Data functions for {{ cookiecutter.resource_plural }}: a connection in, a record (or None) out."""

from ..kit import Connection, Record
from . import sql
from .schemas import {{ cookiecutter.__resource_class }}Create, {{ cookiecutter.__resource_class }}Update

# Reads and writes return a record of (version, body): body is the JSON document, built by
# PostgreSQL; create adds the id for the Location header.


async def create_{{ cookiecutter.resource }}(connection: Connection, *, new: {{ cookiecutter.__resource_class }}Create) -> Record:
    record = await connection.fetchrow(
        sql.INSERT, new.name, new.description, new.price_cents, new.quantity
    )
    assert record is not None  # INSERT ... RETURNING always returns the row
    return record


async def get_{{ cookiecutter.resource }}(connection: Connection, *, {{ cookiecutter.resource }}_id: int) -> Record | None:
    return await connection.fetchrow(sql.SELECT_BY_ID, {{ cookiecutter.resource }}_id)


async def list_{{ cookiecutter.resource_plural }}(connection: Connection, *, after: int, limit: int) -> str:
    """The page document: {"data": [...], "next_after": id-or-null}."""
    page: str = await connection.fetchval(sql.SELECT_PAGE, after, limit)
    return page


async def update_{{ cookiecutter.resource }}(
    connection: Connection,
    *,
    {{ cookiecutter.resource }}_id: int,
    changes: {{ cookiecutter.__resource_class }}Update,
    expected_versions: list[int] | None,
) -> Record | None:
    """The updated row, or None when it is absent or its version is not one of `expected_versions`
    (None: any version)."""
    return await connection.fetchrow(
        sql.UPDATE,
        {{ cookiecutter.resource }}_id,
        changes.name,
        "description" in changes.model_fields_set,
        changes.description,
        changes.price_cents,
        changes.quantity,
        expected_versions,
    )


async def get_{{ cookiecutter.resource }}_version(connection: Connection, *, {{ cookiecutter.resource }}_id: int) -> int | None:
    version: int | None = await connection.fetchval(sql.SELECT_VERSION, {{ cookiecutter.resource }}_id)
    return version


async def delete_{{ cookiecutter.resource }}(
    connection: Connection, *, {{ cookiecutter.resource }}_id: int, expected_versions: list[int] | None
) -> bool:
    """True when the row was deleted; False when it is absent or not at one of `expected_versions`."""
    return await connection.fetchval(sql.DELETE, {{ cookiecutter.resource }}_id, expected_versions) is not None
