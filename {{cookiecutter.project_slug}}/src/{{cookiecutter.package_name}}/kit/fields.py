"""The field types a resource declares its fields with: one marker per kind of column.

A resource declares each field once, in its `...Fields` model (schemas.py), as the Python type
annotated with one of these markers:

    name: Annotated[str, Str(max_length=200)]
    price_cents: Annotated[int, Money()]
    kind: Annotated[Literal["retail", "wholesale"], OneOf()]

The marker gives pydantic the validation (strict types, bounds, one canonical spelling), gives
the OpenAPI document an example, and names the column type that stores the value
(`column_type`, as PostgreSQL's format_type() spells it): the drift test compares it with the
migrated table, and the load test seeds rows by `kind`. Text rules: a one-line string refuses the
C0 and C1 controls and U+2028/U+2029; a text refuses NUL and the controls other than tab, LF, CR.
"""

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from annotated_types import GroupedMetadata
from pydantic import AfterValidator, BeforeValidator, Field

from .numbers import INT64_MAX, INT64_MIN

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_C0_CONTROLS = frozenset(chr(code) for code in range(32)) | {"\x7f"}
# C1 controls (U+0085 is a line break to some parsers) and the Unicode line/paragraph separators.
_C1_CONTROLS = frozenset(chr(code) for code in range(0x80, 0xA0))
_NOT_IN_ONE_LINE = _C0_CONTROLS | _C1_CONTROLS | {"\u2028", "\u2029"}
_NOT_IN_TEXT = (_C0_CONTROLS - {"\t", "\n", "\r"}) | _C1_CONTROLS
# The patterns document the validators in the OpenAPI schema (clients, fuzzers); the validators
# enforce them with a clearer message.
_ONE_LINE_PATTERN = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"
_TEXT_PATTERN = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$"
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# RFC 3339 date-time with a zone (Z or +hh:mm); seconds' fraction up to microseconds.
_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _one_line(value: str | None) -> str | None:
    if value is not None and not _NOT_IN_ONE_LINE.isdisjoint(value):
        raise ValueError("must not contain control characters or line/paragraph separators")
    return value


def _text(value: str | None) -> str | None:
    # Tabs and newlines are text; NUL cannot be stored by PostgreSQL and the rest is noise.
    if value is not None and not _NOT_IN_TEXT.isdisjoint(value):
        raise ValueError("must not contain NUL or control characters other than tab and newline")
    return value


def _spelled(pattern: re.Pattern[str], what: str) -> BeforeValidator:
    # Dates, timestamps and uuids arrive as JSON strings, and only their one canonical spelling
    # is read (a number, "2026-1-2" or an upper-case uuid is refused, not guessed at).
    def check(value: object) -> object:
        if value is None:
            return value  # null: the type says whether the field takes it
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            raise ValueError(f"must be {what}")
        return value

    return BeforeValidator(check)


def _in_utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


@dataclass(frozen=True)
class FieldType(GroupedMetadata):
    """A declared field's kind: its validation, its example and its column type."""

    kind: ClassVar[str]

    @property
    def column_type(self) -> str:
        raise NotImplementedError

    @property
    def example(self) -> Any:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        yield Field(examples=[self.example])
        yield from self.validation()

    def validation(self) -> Iterator[Any]:
        return iter(())


@dataclass(frozen=True)
class Str(FieldType):
    """A one-line string of at most `max_length` characters: varchar(max_length)."""

    max_length: int
    min_length: int = 1
    kind: ClassVar[str] = "str"

    @property
    def column_type(self) -> str:
        return f"character varying({self.max_length})"

    @property
    def example(self) -> str:
        return "example"[: self.max_length].ljust(self.min_length, "x")

    def validation(self) -> Iterator[Any]:
        yield Field(
            min_length=self.min_length,
            max_length=self.max_length,
            json_schema_extra={"pattern": _ONE_LINE_PATTERN},
        )
        yield AfterValidator(_one_line)


@dataclass(frozen=True)
class Text(FieldType):
    """Text of at most `max_length` characters, tabs and line breaks allowed: text."""

    max_length: int = 10_000
    kind: ClassVar[str] = "text"

    @property
    def column_type(self) -> str:
        return "text"

    @property
    def example(self) -> str:
        return "Some text."[: self.max_length]

    def validation(self) -> Iterator[Any]:
        yield Field(max_length=self.max_length, json_schema_extra={"pattern": _TEXT_PATTERN})
        yield AfterValidator(_text)


@dataclass(frozen=True)
class Int(FieldType):
    """An integer within int32 (and within `ge`..`le`): integer."""

    ge: int = INT32_MIN
    le: int = INT32_MAX
    kind: ClassVar[str] = "int"
    _bounds: ClassVar[tuple[int, int]] = (INT32_MIN, INT32_MAX)

    def __post_init__(self) -> None:
        low, high = self._bounds
        if not low <= self.ge <= self.le <= high:
            raise ValueError(f"{type(self).__name__} bounds must lie within {low}..{high}")

    @property
    def column_type(self) -> str:
        return "integer"

    @property
    def example(self) -> int:
        return min(max(self.ge, 1), self.le)

    def validation(self) -> Iterator[Any]:
        # No validator: the body's model is strict (kit/models.py), so an integer is one written
        # as an integer. A number written with a fraction or an exponent (4466.0, 1e2) is parsed
        # as a float and refused naming the field: its float need not be the number written
        # (0.99999999999999999 parses as 1.0). A query's lax model reads its digits by pattern.
        yield Field(ge=self.ge, le=self.le)


@dataclass(frozen=True)
class BigInt(Int):
    """An integer within int64 (and within `ge`..`le`): bigint."""

    ge: int = INT64_MIN
    le: int = INT64_MAX
    kind: ClassVar[str] = "bigint"
    _bounds: ClassVar[tuple[int, int]] = (INT64_MIN, INT64_MAX)

    @property
    def column_type(self) -> str:
        return "bigint"


@dataclass(frozen=True)
class Money(BigInt):
    """An amount in integer minor units (cents), never a float: bigint, 0 or more by default."""

    ge: int = 0
    kind: ClassVar[str] = "money"

    @property
    def example(self) -> int:
        return min(max(self.ge, 1999), self.le)


@dataclass(frozen=True)
class Bool(FieldType):
    """true or false, never 1 or "true": boolean."""

    kind: ClassVar[str] = "bool"

    @property
    def column_type(self) -> str:
        return "boolean"

    @property
    def example(self) -> bool:
        return True


@dataclass(frozen=True)
class Date(FieldType):
    """A calendar date, "YYYY-MM-DD": date."""

    kind: ClassVar[str] = "date"

    @property
    def column_type(self) -> str:
        return "date"

    @property
    def example(self) -> str:
        return "2026-01-31"

    def validation(self) -> Iterator[Any]:
        # Not strict: strict mode reads a date only from a date object, and JSON has none.
        yield Field(strict=False)
        yield _spelled(_DATE, "a date as YYYY-MM-DD")


@dataclass(frozen=True)
class Timestamp(FieldType):
    """An instant, RFC 3339 with its offset ("2026-01-31T12:00:00Z"), stored and answered in UTC:
    timestamp with time zone."""

    kind: ClassVar[str] = "timestamp"

    @property
    def column_type(self) -> str:
        return "timestamp with time zone"

    @property
    def example(self) -> str:
        return "2026-01-31T12:00:00Z"

    def validation(self) -> Iterator[Any]:
        yield Field(strict=False)
        yield _spelled(
            _TIMESTAMP, "an RFC 3339 date-time with its offset, e.g. 2026-01-31T12:00:00Z"
        )
        yield AfterValidator(_in_utc)


@dataclass(frozen=True)
class Uuid(FieldType):
    """A UUID in its canonical spelling (lower-case, hyphenated): uuid."""

    kind: ClassVar[str] = "uuid"

    @property
    def column_type(self) -> str:
        return "uuid"

    @property
    def example(self) -> str:
        return str(uuid.UUID(int=0x0B8A4C8E_1F2D_4E3C_9A5B_6C7D8E9F0A1B))

    def validation(self) -> Iterator[Any]:
        yield Field(strict=False)
        yield _spelled(_UUID, "a UUID, lower-case and hyphenated")


@dataclass(frozen=True)
class OneOf(FieldType):
    """One of the strings of the field's Literal[...] type: text with a CHECK on the set."""

    kind: ClassVar[str] = "enum"

    @property
    def column_type(self) -> str:
        return "text"

    @property
    def example(self) -> None:
        return None  # the Literal's first value; OpenAPI lists them all as its enum

    def __iter__(self) -> Iterator[Any]:
        return iter(())


@dataclass(frozen=True)
class Unique:
    """The field's value is unique across rows (a UNIQUE constraint named `<table>_<field>_key`);
    a second row with it is the 409 problem naming the field."""


def field_type(metadata: list[Any]) -> FieldType | None:
    """The FieldType marker among a field's metadata (pydantic's FieldInfo.metadata)."""
    return next((item for item in metadata if isinstance(item, FieldType)), None)


def is_unique(metadata: list[Any]) -> bool:
    return any(isinstance(item, Unique) for item in metadata)


__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "BigInt",
    "Bool",
    "Date",
    "FieldType",
    "Int",
    "Money",
    "OneOf",
    "Str",
    "Text",
    "Timestamp",
    "Unique",
    "Uuid",
    "field_type",
    "is_unique",
]
