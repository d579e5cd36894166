"""Request bodies derived from a resource's declaration (its `...Fields` model), so that a field
added there is in every test's bodies without a test being edited.

`new_body` is a valid create body whose values differ from call to call (unique fields stay
unique); `change` is a valid one-field PATCH body. `hostile_values` and `valid_values` are what
each field must refuse and keep, by its kind (the rules of kit/fields.py); the tests of a
resource parametrize over them, so a field added later is tested with no test edited.
"""

import itertools
import random
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any, get_args

import asyncpg
import httpx
from pydantic_core import to_jsonable_python

from {{ cookiecutter.package_name }}.kit import (
    FieldType,
    Resource,
    field_type,
    is_unique,
)
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES
from {{ cookiecutter.package_name }}.settings import Settings

# The longest string a test sends as a field's value: a body of the default MAX_BODY_BYTES holds
# it beside the other fields (a field may be declared longer than a body can be: str(10485760)).
LONGEST_SENT: int = Settings.model_fields["max_body_bytes"].default // 2
# Every test of the machinery runs against the first resource of the service.
RESOURCE: Resource | None = RESOURCES[0] if RESOURCES else None
# Values differ between runs on one database as well as between calls.
_counter = itertools.count(random.randrange(1, 10**6) * 1000)


def first_resource() -> Resource:
    assert RESOURCE is not None, "the service has no resource: serving/resources.py lists none"
    return RESOURCE


def _marker(resource: Resource, name: str) -> FieldType:
    marker = field_type(resource.fields.model_fields[name].metadata)
    assert marker is not None, f"{name} is declared without a kit field type"
    return marker


# CJK ideographs, U+4E00 to U+9FFF: one character each, so that a short string tells 20,992^N
# values apart where N decimal digits tell 10^N.
_DENSE_FIRST, _DENSE = 0x4E00, 20_992


def _text_for(name: str, n: int, longest: int) -> str:
    """`<name> <n>`, its last `longest` characters; with room for fewer than five digits, `n`
    written densely instead, so that the values still differ over the rows of a suite."""
    if longest >= 5:
        return f"{name} {n}"[-longest:]
    digits = [chr(_DENSE_FIRST + n // _DENSE**place % _DENSE) for place in range(longest)]
    return "".join(reversed(digits))


def value_for(resource: Resource, name: str, n: int) -> Any:
    """A valid JSON value for field `name`, different for each `n` where the type allows."""
    marker = _marker(resource, name)
    kind = marker.kind
    if kind == "str":
        text = _text_for(name, n, marker.max_length)  # type: ignore[attr-defined]
        return text.ljust(marker.min_length, "x")  # type: ignore[attr-defined]
    if kind == "text":
        return _text_for(name, n, marker.max_length)  # type: ignore[attr-defined]
    if kind in ("int", "bigint", "money"):
        ge, le = marker.ge, marker.le  # type: ignore[attr-defined]
        return ge + n % (le - ge + 1)
    if kind == "bool":
        return n % 2 == 0
    if kind == "date":
        # Days from 2000-01-01 to at most 9999-12-31 (2,921,939 of them).
        return (date(2000, 1, 1) + timedelta(days=n % 2_900_000)).isoformat()
    if kind == "timestamp":
        instant = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=n)
        return instant.isoformat().replace("+00:00", "Z")
    if kind == "uuid":
        return str(uuid.UUID(int=n))
    if kind == "enum":
        values = _enum_args(resource, name)
        return values[n % len(values)]
    raise AssertionError(f"no value for a {kind} field")


def new_body(resource: Resource | None = None, **overrides: Any) -> dict[str, Any]:
    """A valid create body: every declared field, required or not, with fresh values."""
    resource = resource or first_resource()
    n = next(_counter)
    body = {name: value_for(resource, name, n) for name in resource.fields.model_fields}
    return {**body, **overrides}


def change(resource: Resource | None = None) -> dict[str, Any]:
    """A valid PATCH body changing one field (the last declared, to a fresh value)."""
    resource = resource or first_resource()
    name = list(resource.fields.model_fields)[-1]
    return {name: value_for(resource, name, next(_counter))}


# Field-by-field cases: (field, what the value is, the value[, what the service answers]).
Hostile = tuple[str, str, Any]
Valid = tuple[str, str, Any, Any]
# Text that would do harm if it were ever run as SQL rather than bound as a parameter.
INJECTIONS = [
    "'; DROP TABLE {table}; --",
    "1' OR '1'='1",
    "x'); DELETE FROM {table} WHERE ('1'='1",
    "$1 $2 \\x00 %s %d {0}",
    "Robert'); SELECT pg_sleep(10); --",
]


def marker_of(resource: Resource, name: str) -> Any:
    """The field's kit field type (typed Any: its attributes depend on the kind)."""
    return _marker(resource, name)


def kind_of(resource: Resource, name: str) -> str:
    return _marker(resource, name).kind


def is_nullable(resource: Resource, name: str) -> bool:
    return type(None) in get_args(resource.fields.model_fields[name].annotation)


def is_unique_field(resource: Resource, name: str) -> bool:
    return is_unique(resource.fields.model_fields[name].metadata)


def default_of(resource: Resource, name: str) -> Any:
    """The declared default as JSON (the field must have one)."""
    return to_jsonable_python(resource.fields.model_fields[name].get_default())


def _hostile_of_kind(resource: Resource, name: str) -> list[tuple[str, Any]]:
    marker: Any = _marker(resource, name)
    kind = marker.kind
    if kind in ("str", "text"):
        cases: list[tuple[str, Any]] = [("number", 5)]
        if marker.max_length < LONGEST_SENT:  # else the body limit's 413 comes first
            cases.append(("too long", "x" * (marker.max_length + 1)))
        cases += [("empty", "")] if kind == "str" else []
        # Refused in a one-line string and in a text alike (kit/fields.py).
        controls = {"NUL": "\x00", "escape": "\x1b", "DEL": "\x7f", "C1 NEL": "\x85"}
        if kind == "str":
            controls |= {"line feed": "\n", "tab": "\t", "line separator": "\u2028"}
        return cases + [(label, f"a{char}b") for label, char in controls.items()]
    if kind in ("int", "bigint", "money"):
        below, above = ("below bounds", marker.ge - 1), ("above bounds", marker.le + 1)
        # A whole number written with a fraction is not an integer either (kit/fields.py).
        cases = [("string", "1"), ("fraction", 1.5), ("whole with a fraction", 2.0)]
        return [*cases, ("boolean", True), below, above]
    if kind == "bool":
        return [("number", 1), ("string", "true")]
    if kind == "date":
        cases = [("number", 20260131), ("unpadded", "2026-1-31"), ("no such day", "2026-02-30")]
        return [*cases, ("with a time", "2026-01-31T00:00:00Z"), ("slashes", "2026/01/31")]
    if kind == "timestamp":
        cases = [("number", 1769860800), ("no offset", "2026-01-31T12:00:00")]
        cases += [("space for T", "2026-01-31 12:00:00Z"), ("date only", "2026-01-31")]
        cases += [("no such hour", "2026-01-31T25:00:00Z")]
        return [*cases, ("nanoseconds", "2026-01-31T12:00:00.123456789Z")]
    if kind == "uuid":
        example = str(uuid.UUID(int=0x0123456789ABCDEF))
        cases = [("number", 5), ("upper case", example.upper()), ("short", example[:-1])]
        return [*cases, ("no hyphens", example.replace("-", "")), ("braces", "{" + example + "}")]
    if kind == "enum":
        choices = [str(value) for value in _enum_args(resource, name)]
        upper = choices[0].upper()
        other_case = [("other case", upper)] if upper not in choices else []
        return [("number", 1), ("non-member", "|".join(choices) + "-x"), *other_case]
    raise AssertionError(f"no hostile values for a {kind} field")


def hostile_values(resource: Resource) -> list[Hostile]:
    """Every declared field with each value its kind refuses (null when it is not nullable)."""
    return [
        (name, label, value)
        for name in resource.fields.model_fields
        for label, value in _hostile_of_kind(resource, name)
        + ([] if is_nullable(resource, name) else [("null", None)])
    ]


def _enum_args(resource: Resource, name: str) -> tuple[Any, ...]:
    args = get_args(resource.fields.model_fields[name].annotation)
    literal = next((arg for arg in args if get_args(arg)), None)
    return get_args(literal) if literal is not None else args


def _valid_of_kind(resource: Resource, name: str) -> list[tuple[str, Any, Any]]:
    marker: Any = _marker(resource, name)
    kind = marker.kind
    if kind in ("str", "text"):
        shortest = "x" * (marker.min_length if kind == "str" else 0)
        texts = {"shortest": shortest, "longest": "y" * min(marker.max_length, LONGEST_SENT)}
        texts["unicode"] = "żółw 🐢 ü"[: marker.max_length]
        if kind == "text":
            texts["tab and line breaks"] = "a\tb\nc\r\nd"[: marker.max_length]
        return [(label, text, text) for label, text in texts.items()]
    if kind in ("int", "bigint", "money"):
        return [("lowest", marker.ge, marker.ge), ("highest", marker.le, marker.le)]
    if kind == "bool":
        return [("true", True, True), ("false", False, False)]
    if kind == "date":
        days = ["2026-01-31", "2024-02-29", "0001-01-01", "9999-12-31"]
        return [(day, day, day) for day in days]
    if kind == "timestamp":
        instants = ["2026-01-31T12:00:00Z", "2026-01-31T12:00:00.123456+02:00"]
        instants += ["2026-01-31T23:30:00-05:00", "9999-12-31T23:59:59.999999Z"]
        return [(instant, instant, _in_utc(instant)) for instant in instants]
    if kind == "uuid":
        spelled = [str(uuid.UUID(int=1)), str(uuid.UUID(int=2**128 - 1)), marker.example]
        return [(value, value, value) for value in spelled]
    if kind == "enum":
        return [(str(value), value, value) for value in _enum_args(resource, name)]
    raise AssertionError(f"no valid values for a {kind} field")


def _in_utc(instant: str) -> str:
    return datetime.fromisoformat(instant).astimezone(UTC).isoformat()


def valid_values(resource: Resource) -> list[Valid]:
    """Every declared field with the values its kind keeps: (field, label, sent, answered)."""
    return [
        (name, label, sent, answered)
        for name in resource.fields.model_fields
        for label, sent, answered in _valid_of_kind(resource, name)
        + ([("null", None, None)] if is_nullable(resource, name) else [])
    ]


def as_answered(resource: Resource, name: str, value: Any) -> Any:
    """`value` as comparable: an instant keeps its offset, so a non-UTC answer differs."""
    if value is None or kind_of(resource, name) != "timestamp":
        return value
    instant = datetime.fromisoformat(value)
    return instant, instant.utcoffset()


def case_id(*parts: object) -> str:
    """A readable pytest id: the field and what its value is."""
    return "-".join(str(part).replace(" ", "-") for part in parts)


async def created(
    client: httpx.AsyncClient, resource: Resource | None = None, **overrides: Any
) -> dict[str, Any]:
    """A new row through the API, from `new_body`; returns the answer."""
    resource = resource or first_resource()
    response = await client.post(resource.prefix, json=new_body(resource, **overrides))
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def run_sql(database_url: str, query: str, *args: object) -> Any:
    """The first value `query` returns, run on a connection of its own (outside the app's pool
    and any transaction)."""
    # No named statements: behind PgBouncer in transaction mode (the template runs this suite
    # through it) the next client may get a server connection that still holds one.
    connection = await asyncpg.connect(database_url, statement_cache_size=0)
    try:
        return await connection.fetchval(query, *args)
    finally:
        await connection.close()


async def rows_in(database_url: str, table: str) -> int:
    count: int = await run_sql(database_url, f"SELECT count(*) FROM {table}")
    return count
