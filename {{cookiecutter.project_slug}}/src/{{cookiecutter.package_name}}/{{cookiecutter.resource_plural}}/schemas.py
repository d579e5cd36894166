"""The {{ cookiecutter.resource }} contract: what clients may send and what they get back."""

import re
from datetime import datetime
from typing import Annotated, Any, Self

from fastapi import Path, Query
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ..kit import INT64_MAX, JSON_EXACT_INTEGER

INT32_MAX = 2**31 - 1
_C0_CONTROLS = frozenset(chr(code) for code in range(32)) | {"\x7f"}
# C1 controls (U+0085 is a line break to some parsers) and the Unicode line/paragraph separators.
_C1_CONTROLS = frozenset(chr(code) for code in range(0x80, 0xA0))
_SEPARATORS = frozenset({"\u2028", "\u2029"})
_NOT_IN_NAMES = _C0_CONTROLS | _C1_CONTROLS | _SEPARATORS
_NOT_IN_DESCRIPTIONS = (_C0_CONTROLS - {"\t", "\n", "\r"}) | _C1_CONTROLS


def _no_control_characters(value: str) -> str:
    if not _NOT_IN_NAMES.isdisjoint(value):
        raise ValueError("must not contain control characters or line/paragraph separators")
    return value


def _no_nul_or_stray_controls(value: str) -> str:
    # Tabs and newlines are text; NUL cannot be stored by PostgreSQL and the rest is noise.
    if not _NOT_IN_DESCRIPTIONS.isdisjoint(value):
        raise ValueError("must not contain NUL or control characters other than tab and newline")
    return value


def _integral(value: object) -> object:
    # JSON Schema counts 4466.0 as an integer, so the contract accepts it; 1.5, NaN and inf are not.
    # Integral JSON numbers written with a fraction (4466.0) are exact up to JSON_EXACT_INTEGER;
    # above it a float may already be another number than the one written.
    if isinstance(value, float) and value.is_integer() and abs(value) <= JSON_EXACT_INTEGER:
        return int(value)
    return value


def _canonical_digits(pattern: str) -> BeforeValidator:
    # One resource, one URL: "+1", "01", "1.0", "1_0", " 1" and non-ASCII digits would all parse as
    # integers; only the canonical spelling is accepted (what proxies and caches see is what is read).
    digits = re.compile(pattern.removeprefix("^").removesuffix("$"))

    def check(value: object) -> object:
        if isinstance(value, str) and digits.fullmatch(value) is None:
            raise ValueError(
                "must be ASCII digits without sign, leading zeros, separators or spaces"
            )
        return value

    return BeforeValidator(check)


# The patterns document the validators in the OpenAPI schema (clients, fuzzers); the validators
# enforce them with a clearer message.
POSITIVE_DECIMAL = r"^[1-9][0-9]{0,18}$"
DECIMAL = r"^(?:0|[1-9][0-9]{0,18})$"

Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        json_schema_extra={"pattern": r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"},
    ),
    AfterValidator(_no_control_characters),
]
Description = Annotated[
    str,
    Field(
        max_length=2000, json_schema_extra={"pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$"}
    ),
    AfterValidator(_no_nul_or_stray_controls),
]
# Constraints before the validators: pydantic then keeps them on the integer (minimum/maximum in
# the JSON schema), and a BeforeValidator runs before everything on its left.
PriceCents = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(_integral)]
Quantity = Annotated[int, Field(ge=0, le=INT32_MAX), BeforeValidator(_integral)]

# In the URL: the id in the path and the paging numbers in the query, canonical decimal only.
{{ cookiecutter.__resource_class }}Id = Annotated[
    int,
    Path(
        ge=1,
        le=INT64_MAX,
        description="The {{ cookiecutter.resource }} id, in canonical decimal (no sign, zeros or spaces).",
        json_schema_extra={"pattern": POSITIVE_DECIMAL},
    ),
    _canonical_digits(POSITIVE_DECIMAL),
]
PageLimit = Annotated[
    int,
    Query(
        ge=1,
        le=500,
        description="Page size, 1 to 500.",
        json_schema_extra={"pattern": POSITIVE_DECIMAL},
    ),
    _canonical_digits(POSITIVE_DECIMAL),
]
PageAfter = Annotated[
    int,
    Query(
        ge=0,
        le=INT64_MAX,
        description="Last id of the previous page (its `next_after`); 0 for the first page.",
        json_schema_extra={"pattern": DECIMAL},
    ),
    _canonical_digits(DECIMAL),
]

# Strict: "12" is not a number and 1.5 is not an integer; unknown fields are an error, not noise.
_INPUT = ConfigDict(extra="forbid", strict=True)


class {{ cookiecutter.__resource_class }}Create(BaseModel):
    model_config = _INPUT

    name: Name
    description: Description | None = None
    price_cents: PriceCents
    quantity: Quantity = 0


def _update_schema(schema: dict[str, Any]) -> None:
    # Say what the validators below enforce: at least one field, and null only for description.
    schema["minProperties"] = 1
    for name in ("name", "price_cents", "quantity"):
        field = schema["properties"][name]
        (kept,) = [choice for choice in field.pop("anyOf") if choice.get("type") != "null"]
        field.update(kept)


class {{ cookiecutter.__resource_class }}Update(BaseModel):
    """Partial update: omitted fields keep their value; only description may be set to null.

    At least one field: `{}` changes nothing, so it is refused (422) rather than bumping the
    version and `updated_at` of a row that did not change.
    """

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_update_schema)

    name: Name | None = None
    description: Description | None = None
    price_cents: PriceCents | None = None
    quantity: Quantity | None = None

    # A field validator (not a model one) so that the 422 names the field that was null.
    @field_validator("name", "price_cents", "quantity")
    @classmethod
    def _reject_null_for_required_fields(cls, value: object) -> object:
        if value is None:
            raise ValueError("may be omitted but not null")
        return value

    @model_validator(mode="after")
    def _reject_no_change(self) -> Self:
        if not self.model_fields_set:
            raise ValueError(
                "no field to change: send at least one of " + ", ".join(type(self).model_fields)
            )
        return self


class {{ cookiecutter.__resource_class }}(BaseModel):
    id: int = Field(description="Read-only, int64.")
    name: str
    description: str | None
    price_cents: int
    quantity: int
    created_at: datetime = Field(description="Read-only, RFC 3339.")
    updated_at: datetime = Field(description="Read-only, RFC 3339.")
    version: int = Field(description="Read-only; +1 per update; the ETag.")


class {{ cookiecutter.__resource_class }}Page(BaseModel):
    data: list[{{ cookiecutter.__resource_class }}]
    next_after: int | None = Field(
        description="Pass as ?after= for the next page; null at the end."
    )
