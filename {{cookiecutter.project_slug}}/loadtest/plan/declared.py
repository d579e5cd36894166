"""A resource's load-test requests and seed rows, derived from its declaration (the `...Fields`
model of its schemas.py), so that `make resource` needs no edit here.

Per field kind (kit/fields.py): the JSON value of a create or patch template, with placeholders
(loadtest/plan/operations.py) where the type allows a varying value, and the SQL expression of a seeded
row's value in terms of `g`, the row's number in generate_series. A unique field's values are
distinct per `g`, and a create's use `{u}` (12 digits) where they fit. Where they do not (a
unique date or timestamp, a unique string shorter than 12 characters, a unique number whose
bounds are narrow) every create would repeat a value and answer 409: such a resource has no
create scenario (`fresh_creates`).
"""

import json
from typing import Any, get_args

from {{ cookiecutter.package_name }}.kit import FieldType, Resource, field_type, is_unique, list_query

from .operations import RANDOM_BELOW, UNIQUE_DIGITS, UNIQUE_RANGE, parts

_SPREAD = 7919  # a prime: a non-unique number's seeded values spread over its range
_N_DIGITS = len(str(RANDOM_BELOW - 1))


def plural(resource: Resource) -> str:
    """The resource's name in scenario names and in budget.toml: its path, `/items` -> `items`."""
    return resource.prefix.strip("/")


def _marker(resource: Resource, name: str) -> FieldType:
    marker = field_type(resource.fields.model_fields[name].metadata)
    if marker is None:
        raise ValueError(f"{plural(resource)}.{name} is declared without a kit field type")
    return marker


def _unique(resource: Resource, name: str) -> bool:
    return is_unique(resource.fields.model_fields[name].metadata)


def _nullable(resource: Resource, name: str) -> bool:
    return type(None) in get_args(resource.fields.model_fields[name].annotation)


def members(resource: Resource, name: str) -> tuple[str, ...]:
    """The values of an enum field: its Literal's, the Literal found inside an Optional too."""
    choices = get_args(resource.fields.model_fields[name].annotation)
    literal = next((arg for arg in choices if get_args(arg)), None)
    return get_args(literal) if literal is not None else choices


def filtered_query(resource: Resource) -> str | None:
    """The query of a filtered, sorted 20-row page over seeded rows, from the fields marked
    :filter and :sort (kit/listing.py), or None when no field is marked: sorted descending by the
    first sortable field, filtered on the first enum or bool field marked (a value most seeded
    rows have), else on a range of the first number, date or timestamp marked."""
    query = list_query(resource.fields)
    parts = ["limit=20"]
    kinds = {name: _marker(resource, name).kind for name in resource.fields.model_fields}
    sets = [
        c for c in query.conditions if c.operator == "=" and kinds[c.column] in ("enum", "bool")
    ]
    ranges = [c for c in query.conditions if c.operator == ">=" and kinds[c.column] != "timestamp"]
    if sets:
        kind, name = kinds[sets[0].column], sets[0].column
        parts.append(f"{name}={members(resource, name)[0] if kind == 'enum' else 'true'}")
    elif ranges:
        parts.append(f"{ranges[0].parameter}={_seeded_low(resource, ranges[0].column)}")
    if query.sortable:
        parts.append(f"sort=-{next(iter(query.sortable))}")
    return "&".join(parts) if len(parts) > 1 else None


def _seeded_low(resource: Resource, name: str) -> str:
    # The smallest value the seed gives (see _seeded): every seeded row is at or above it.
    marker: Any = _marker(resource, name)
    return "2000-01-01" if marker.kind == "date" else str(min(max(0, marker.ge), marker.le))


def _text(name: str, marker: Any, unique: bool) -> str:
    """A string's JSON template: `"<name> {n}"`, `{u}` for a unique one, shortened to fit."""
    placeholder, fewest, most = (
        ("{u}", UNIQUE_DIGITS, UNIQUE_DIGITS) if unique else ("{n}", 1, _N_DIGITS)
    )
    longest, shortest = marker.max_length, getattr(marker, "min_length", 0)
    for prefix in (f"{name} ", ""):
        if shortest <= len(prefix) + fewest and len(prefix) + most <= longest:
            return json.dumps(prefix + placeholder)
    return json.dumps(marker.example)


def _number(marker: Any, unique: bool) -> str:
    """A number's template: `{u}` or `{n}` (`1{n}` above a small lower bound, `-{n}` below an
    upper bound of 0 or more) where its bounds hold every value, else the marker's example."""
    low, high = marker.ge, marker.le
    if unique and low <= UNIQUE_RANGE[0] and UNIQUE_RANGE[1] - 1 <= high:
        return "{u}"
    if low <= 0 and high >= RANDOM_BELOW - 1:
        return "{n}"
    if low <= 10 and high >= 2 * RANDOM_BELOW - 1:  # 1{n}: 10 .. 1999999
        return "1{n}"
    if low <= -(RANDOM_BELOW - 1) and high >= 0:  # -{n}: -999999 .. 0
        return "-{n}"
    return json.dumps(marker.example)


def value_template(resource: Resource, name: str) -> str:
    """The JSON template of field `name`'s value in a request body."""
    marker, unique = _marker(resource, name), _unique(resource, name)
    kind = marker.kind
    if kind in ("str", "text"):
        return _text(name, marker, unique)
    if kind in ("int", "bigint", "money"):
        return _number(marker, unique)
    if kind == "bool":
        return "true"
    if kind == "enum":
        return json.dumps(members(resource, name)[0])
    if kind == "timestamp":  # a fraction of 1 to 6 digits: RFC 3339 and the marker's spelling
        return '"2026-01-31T12:00:00.{n}Z"'
    if kind == "uuid":
        return '"00000000-0000-4000-8000-{u}"'  # {u} is 12 digits: the last group, in hex
    return json.dumps(marker.example)  # date: no placeholder spells one


def fresh_creates(resource: Resource) -> bool:
    """Whether each create of the table writes fresh values into every unique field (a `{u}`),
    so that none answers 409."""
    return all(
        "{u}" in value_template(resource, name)
        for name in resource.fields.model_fields
        if _unique(resource, name)
    )


def _object(resource: Resource, names: list[str]) -> str:
    return (
        "{"
        + ", ".join(f"{json.dumps(name)}: {value_template(resource, name)}" for name in names)
        + "}"
    )


def create_body(resource: Resource) -> str:
    """A create's JSON template: every declared field, required or not."""
    return _object(resource, list(resource.fields.model_fields))


def patch_body(resource: Resource) -> str:
    """A patch's JSON template: one field that is not unique, the last declared whose value
    varies from request to request (else the last not unique). Where every field is unique: the
    last whose value is fresh in each request (`{u}`), else the last that may be null, set to
    null (NULLs never conflict), else the last: a fixed value, which conflicts from the second
    row patched on."""
    names = list(resource.fields.model_fields)
    plain = [name for name in names if not _unique(resource, name)]
    if plain:
        varying = [name for name in plain if len(parts(value_template(resource, name))) > 1]
        return _object(resource, [(varying or plain)[-1]])
    fresh = [name for name in names if "{u}" in value_template(resource, name)]
    if fresh:
        return _object(resource, [fresh[-1]])
    nullable = [name for name in names if _nullable(resource, name)]
    if nullable:
        return "{" + f"{json.dumps(nullable[-1])}: null" + "}"
    return _object(resource, [names[-1]])


def _seeded(resource: Resource, name: str) -> str:
    """The SQL expression of the seeded value of field `name` in row `g`."""
    marker, unique = _marker(resource, name), _unique(resource, name)
    kind = marker.kind
    if kind in ("str", "text"):
        longest: int = marker.max_length  # type: ignore[attr-defined]
        text = f"g || ' {name}'"  # the number first: shortened, the values stay distinct
        if unique and longest < _N_DIGITS:
            text = _dense(min(longest, 3))  # too short for the row's number in digits
        wanted = getattr(marker, "min_length", 0)
        if wanted > 1:
            return f"rpad({text}, {longest}, 'x')"
        return f"left({text}, {longest})"
    if kind in ("int", "bigint", "money"):
        low, high = marker.ge, marker.le  # type: ignore[attr-defined]
        base = min(max(0, low), high)
        if unique:
            # From 0 where the rows fit above it, else from the lower bound (the spec gives a unique
            # number room for a million values: scaffold/spec.py).
            return f"{base if high - base >= RANDOM_BELOW else low} + g"
        return f"{base} + (g::bigint * {_SPREAD}) % {min(high - base + 1, 100_000)}"
    if kind == "bool":
        return "g % 2 = 0"
    if kind == "enum":
        values = members(resource, name)
        array = ", ".join("'" + value.replace("'", "''") + "'" for value in values)
        return f"(ARRAY[{array}])[1 + g % {len(values)}]"
    if kind == "date":
        return "date '2000-01-01' + g"
    if kind == "timestamp":
        return "timestamptz '2000-01-01 00:00:00+00' + g * interval '1 second'"
    if kind == "uuid":
        return "('00000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid"
    raise ValueError(f"{plural(resource)}.{name}: no seed for a {kind} field")


def _dense(width: int) -> str:
    """`g` in `width` CJK ideographs (U+4E00 on, 20,992 of them): 20,992^width values."""
    places = [f"chr(19968 + (g / {20_992**place}) % 20992)" for place in reversed(range(width))]
    return " || ".join(places)


def seed_rows(resource: Resource) -> str:
    """One statement that inserts rows $1 .. $2 (in generate_series' numbering): the seeder runs
    it from the table's count + 1, so that a second run inserts nothing and unique values stay
    unique."""
    names = list(resource.fields.model_fields)
    columns = ", ".join(names)
    values = ",\n           ".join(_seeded(resource, name) for name in names)
    return (  # names of the declaration, not of a request
        f"INSERT INTO {resource.table} ({columns})\n"  # noqa: S608
        f"    SELECT {values}\n"
        f"      FROM generate_series($1::integer, $2::integer) AS g"
    )
