"""The {{ cookiecutter.resource }} contract: what clients may send and what they get back."""

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_C0_CONTROLS = {chr(code) for code in range(32)} | {"\x7f"}


def _no_control_characters(value: str) -> str:
    if any(char in _C0_CONTROLS for char in value):
        raise ValueError("must not contain control characters")
    return value


def _no_nul_or_stray_controls(value: str) -> str:
    # Tabs and newlines are text; NUL cannot be stored by PostgreSQL and the rest is noise.
    if any(char in _C0_CONTROLS - {"\t", "\n", "\r"} for char in value):
        raise ValueError("must not contain NUL or control characters other than tab and newline")
    return value


# The patterns only document the validators in the OpenAPI schema (clients, fuzzers); the
# validators enforce them with a clearer message.
Name = Annotated[
    str,
    Field(min_length=1, max_length=200, json_schema_extra={"pattern": r"^[^\x00-\x1f\x7f]*$"}),
    AfterValidator(_no_control_characters),
]
Description = Annotated[
    str,
    Field(max_length=2000, json_schema_extra={"pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"}),
    AfterValidator(_no_nul_or_stray_controls),
]
PriceCents = Annotated[int, Field(ge=0, le=INT64_MAX)]
Quantity = Annotated[int, Field(ge=0, le=INT32_MAX)]

# Strict: "12" is not a number and 1.0 is not an integer; unknown fields are an error, not noise.
_INPUT = ConfigDict(extra="forbid", strict=True)


class {{ cookiecutter.__resource_class }}Create(BaseModel):
    model_config = _INPUT

    name: Name
    description: Description | None = None
    price_cents: PriceCents
    quantity: Quantity = 0


class {{ cookiecutter.__resource_class }}Update(BaseModel):
    """Partial update: omitted fields keep their value; only description may be set to null."""

    model_config = _INPUT

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
    next_after: int | None = Field(description="Pass as ?after= for the next page; null at the end.")


