"""The models a resource derives from its one declaration of fields.

    class ItemFields(Declared): ...                      # the declaration (schemas.py)
    class ItemCreate(ItemFields): ...                    # POST body: the fields as declared
    class ItemUpdate(changes_of(ItemFields)): ...        # PATCH body: each field optional
    class Item(ItemFields, Stored): ...                  # what the service answers
    class ItemPage(Page[Item]): ...                      # a keyset page of them

A field added to the declaration is in all of them, in the SQL (sql.py derives its column lists
from the declaration) and in the tests (they derive their bodies from it).
"""

from datetime import datetime
{% if cookiecutter.python_version == "3.11" -%}
from typing import Annotated, Any, ClassVar, Generic, Self, TypeVar
{%- else -%}
from typing import Annotated, Any, ClassVar, Self
{%- endif %}

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

# Strict: "12" is not a number and 1.5 is not an integer; unknown fields are an error, not noise.
_INPUT = ConfigDict(extra="forbid", strict=True)


class Declared(BaseModel):
    """Base of a resource's declaration: what a client may send, validated strictly.

    `retired_fields` names fields taken out of the declaration whose columns stay until a later
    revision drops them (expand/contract, docs/changing-the-schema.md): being out of the
    declaration, no statement reads or writes them and the API does not show them; the drift test
    knows their columns are kept on purpose.
    """

    model_config = _INPUT
    retired_fields: ClassVar[tuple[str, ...]] = ()


def _without_default(schema: dict[str, Any]) -> None:
    # An omitted PATCH field keeps its stored value: it has no default to document.
    schema.pop("default", None)


class _Changes(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"minProperties": 1})

    @model_validator(mode="after")
    def _reject_no_change(self) -> Self:
        # `{}` changes nothing, so it is refused (422) rather than bumping the version and
        # `updated_at` of a row that did not change.
        if not self.model_fields_set:
            raise ValueError(
                "no field to change: send at least one of " + ", ".join(type(self).model_fields)
            )
        return self


def changes_of(declared: type[Declared]) -> type[BaseModel]:
    """The PATCH body of `declared`: every field optional (omitted fields keep their value),
    null only where the declared type allows it, at least one field. Send it to the database
    with `model_dump_json(exclude_unset=True)`."""
    definitions: dict[str, Any] = {
        name: (
            # The declared type with its constraints, not widened to None: a null sent for a
            # field that cannot be null is refused by the type itself, naming the field.
            Annotated[(info.annotation, *info.metadata)],
            Field(default=None, json_schema_extra=_without_default),
        )
        for name, info in declared.model_fields.items()
    }
    name = declared.__name__.removesuffix("Fields") + "Update"
    changes: type[BaseModel] = create_model(
        name, __base__=_Changes, __module__=declared.__module__, **definitions
    )
    return changes


class Stored(BaseModel):
    """What the service adds to every row: its id, its times and its version (the ETag)."""

    # Every field is in every answer, defaults or not.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    id: int = Field(description="Read-only, int64.")
    created_at: datetime = Field(description="Read-only, RFC 3339.")
    updated_at: datetime = Field(description="Read-only, RFC 3339.")
    version: int = Field(description="Read-only; +1 per update; the ETag.")


{% if cookiecutter.python_version == "3.11" -%}
RowT = TypeVar("RowT", bound=BaseModel)


class Page(BaseModel, Generic[RowT]):
{%- else -%}
class Page[RowT: BaseModel](BaseModel):
{%- endif %}
    """One keyset page: the rows, and where the next page starts."""

    data: list[RowT]
    next_after: int | None = Field(
        description="Id order: pass as ?after= for the next page; null at the end (and when sorted)."
    )
    # Required: every page has the key (null in id order), and a client types it `str | None`.
    next_cursor: str | None = Field(
        description="Sorted (?sort=): pass as ?cursor= with the same sort and filters for the next "
        "page; null at the end (and in id order).",
    )
