"""Hostile bodies, one table: JSON that is malformed, of the wrong type or range, strings with
controls, bytes that are not UTF-8, the wrong Content-Type, bodies over the limit. Each gets a
4xx problem+json naming the problem, none a 5xx, and none of them changes the table."""

from collections.abc import AsyncIterator

import httpx
import orjson
import pytest

from {{ cookiecutter.package_name }}.kit import Str, Text, field_type
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, count_rows, first_field
from ..declared import first_resource
from .hostile import (
    JSON,
    Hostile,
    assert_names_the_problem,
    assert_refused_and_unchanged,
    json_change,
    json_raw,
    json_with,
    json_without,
    patch,
    post,
)

# Bodies are derived from the first resource's declaration; the rows aimed at one field take the
# first field of the kind they need, and are left out when it declares none (each resource's own
# tests try every one of its fields).
ANY = next(iter(first_resource().fields.model_fields))
REQUIRED = first_field(required=True)
NUMBER = first_field("int", "bigint", "money")
LINE = first_field("str")
TEXT = first_field("text")

HOSTILE = {
    # Not JSON at all, or not an object.
    "malformed-json": post(
        b'{"field": "x",', 400, names_field="body", detail_says="not valid JSON"
    ),
    # The error names the body, not the character offset FastAPI reports ("field": "28").
    "trailing-garbage": post(
        json_with() + b" x", 400, names_field="body", detail_says="not valid JSON"
    ),
    "trailing-second-object": post(
        json_with() + json_with(), 400, names_field="body", detail_says="not valid JSON"
    ),
    "single-quotes": post(b"{'field': 'x'}", 400, detail_says="not valid JSON"),
    "empty-body": post(b"", names_field="body"),
    "array-body": post(b"[]", names_field="body"),
    "null-body": post(b"null", names_field="body"),
    "deeply-nested": post(b"[" * 20_000 + b"]" * 20_000, 400, detail_says="nested too deeply"),
    # Unknown and read-only fields.
    "unknown-field": post(json_with(owner="mallory"), names_field="owner"),
    "read-only-id": post(json_with(id=1), names_field="id"),
    "read-only-version": post(json_with(version=7), names_field="version"),
    # Bytes that are not UTF-8, or not the JSON the header claims.
    "invalid-utf8-in-string": post(json_raw(ANY, b'"\xff\xfe"'), 400, detail_says="UTF-8"),
    "overlong-utf8": post(json_raw(ANY, b'"\xc0\xaf"'), 400, detail_says="UTF-8"),
    "latin1-body": post(json_raw(ANY, '"café"'.encode("latin-1")), 400, detail_says="UTF-8"),
    # Wrong Content-Type.
    "text-plain": Hostile(
        "POST", BASE, 415, json_with(), {"content-type": "text/plain"}, detail_says="Content-Type"
    ),
    "form-encoded": Hostile(
        "POST",
        BASE,
        415,
        b"field=x&other=1",
        {"content-type": "application/x-www-form-urlencoded"},
        detail_says="Content-Type",
    ),
    "xml": Hostile(
        "POST",
        BASE,
        415,
        b"<row/>",
        {"content-type": "application/xml"},
        detail_says="Content-Type",
    ),
    "no-content-type": Hostile("POST", BASE, 415, json_with(), {}, detail_says="Content-Type"),
    "patch-text-plain": Hostile(
        "PATCH",
        BASE + "/{id}",
        415,
        json_change(),
        {"content-type": "text/plain"},
        detail_says="Content-Type",
    ),
    # PATCH specifics.
    "patch-unknown-field": patch(b'{"colour": "red"}', names_field="colour"),
    "patch-malformed-json": patch(b'{"field": ', 400, detail_says="not valid JSON"),
    "patch-trailing-garbage": patch(
        json_change() + b" x", 400, names_field="body", detail_says="not valid JSON"
    ),
    # {} changes nothing: refused rather than bumping the version of an unchanged row.
    "patch-empty-object": patch(b"{}", names_field="body", detail_says="body"),
    "patch-only-unknown-fields": patch(b'{"id": 9, "version": 9}', names_field="id"),
    # A malformed X-Request-ID is replaced, never echoed (see the test below); here it rides along.
    "bad-body-with-malformed-request-id": Hostile(
        "POST",
        BASE,
        400,
        b"{",
        {**JSON, "x-request-id": "<script>" + "x" * 500},
        detail_says="not valid JSON",
    ),
}


def _max_length(name: str) -> int:
    marker = field_type(first_resource().fields.model_fields[name].metadata)
    assert isinstance(marker, Str | Text)
    return marker.max_length


# A body above the default MAX_BODY_BYTES is refused whole before a field is read (413).
BODY_LIMIT: int = Settings.model_fields["max_body_bytes"].default


def _too_long(name: str, character: str) -> Hostile:
    """A value one character longer than the field takes: 422 naming the field, or for a field
    longer than a body may be, the body limit's 413 first."""
    body = json_with(**{name: character * (_max_length(name) + 1)})
    if len(body) > BODY_LIMIT:
        return post(body, 413, detail_says="exceeds")
    return post(body, names_field=name)


def _required_rows(name: str) -> dict[str, Hostile]:
    return {
        "missing-required-field": post(json_without(name), names_field=name),
        "patch-null-required-field": patch(orjson.dumps({name: None}), names_field=name),
    }


def _number_rows(name: str) -> dict[str, Hostile]:
    """An integer field: strict (no coercion of "12", true or 1.5), within int64, finite."""

    def written(text: str) -> Hostile:
        return post(json_raw(name, text.encode()), names_field=name)

    return {
        "number-as-string": post(json_with(**{name: "12"}), names_field=name),
        "number-as-bool": post(json_with(**{name: True}), names_field=name),
        "number-above-int64": post(json_with(**{name: 2**63}), names_field=name),
        "number-of-40-digits": written("9" * 40),
        "number-1e400": written("1e400"),
        "number-nan": written("NaN"),
        "number-infinity": written("Infinity"),
        "number-minus-infinity": written("-Infinity"),
        # A number written with a fraction or an exponent is not an integer, whole or not.
        "number-float-beyond-2-53": written("1e17"),
        # 2^53 + 1 parses as 2^53, so a float of 2^53 may stand for either.
        "number-float-2-53": written("9007199254740992.0"),
        "number-float-2-53-plus-1": written("9007199254740993.0"),
        "number-float-minus-2-53": written("-9007199254740992.0"),
        "number-fraction-half": written("2.5"),
        "number-tiny-fraction": written("1.0000001"),
    }


def _line_rows(name: str) -> dict[str, Hostile]:
    """A one-line string: not too long, no C0 or C1 controls, no line separators, valid Unicode."""

    def holding(text: str) -> Hostile:
        return post(json_with(**{name: text}), names_field=name)

    return {
        "line-as-number": post(json_with(**{name: 5}), names_field=name),
        "line-as-object": post(json_with(**{name: {"first": "x"}}), names_field=name),
        "line-too-long": _too_long(name, "x"),
        "line-with-nul": holding("a\x00b"),
        "line-with-bell": holding("a\x07b"),
        "line-with-newline": holding("a\nb"),
        "line-with-escape": holding("\x1b[31mred"),
        "line-lone-surrogate": post(json_raw(name, b'"\\ud800"'), names_field=name),
        "line-with-nel-u0085": holding("a\u0085b"),
        "line-with-c1-csi-u009b": holding("\u009b31mred"),
        "line-with-c1-u0080": holding("a\u0080"),
        "line-with-line-separator-u2028": holding("a\u2028b"),
        "line-with-paragraph-separator-u2029": holding("a\u2029b"),
        "patch-line-with-line-separator": patch(orjson.dumps({name: "a\u2028b"}), names_field=name),
        "patch-line-with-c1": patch(orjson.dumps({name: "a\u0085b"}), names_field=name),
    }


def _text_rows(name: str) -> dict[str, Hostile]:
    """A text: not too long, no NUL, no controls but tab and newlines."""

    def holding(text: str) -> Hostile:
        return post(json_with(**{name: text}), names_field=name)

    return {
        "text-as-list": post(json_with(**{name: ["x"]}), names_field=name),
        "text-too-long": _too_long(name, "d"),
        "text-with-nul": holding("a\x00b"),
        "text-with-nel-u0085": holding("a\u0085b"),
        "text-with-del": holding("a\x7fb"),
    }


HOSTILE.update(_required_rows(REQUIRED) if REQUIRED else {})
HOSTILE.update(_number_rows(NUMBER) if NUMBER else {})
HOSTILE.update(_line_rows(LINE) if LINE else {})
HOSTILE.update(_text_rows(TEXT) if TEXT else {})


@pytest.mark.parametrize("case", list(HOSTILE.values()), ids=list(HOSTILE))
async def test_a_hostile_body_gets_a_4xx_problem_naming_it_and_changes_nothing(
    client: httpx.AsyncClient, database_url: str, existing_id: int, case: Hostile
) -> None:
    await assert_refused_and_unchanged(client, database_url, existing_id, case)


async def test_body_above_max_body_bytes_gets_413_and_changes_nothing(
    client: httpx.AsyncClient, settings: Settings, database_url: str
) -> None:
    limit = settings.max_body_bytes
    before = await count_rows(database_url)
    response = await client.post(BASE, content=json_with(padding="d" * limit), headers=JSON)
    assert_names_the_problem(response, Hostile("POST", BASE, 413, detail_says=str(limit)))
    assert await count_rows(database_url) == before


async def test_chunked_body_above_max_body_bytes_gets_413(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    limit = settings.max_body_bytes

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"padding": "'
        for _ in range(limit // 1024 + 1):
            yield b"d" * 1024
        yield b'"}'

    response = await client.post(BASE, content=chunks(), headers=JSON)
    assert_names_the_problem(response, Hostile("POST", BASE, 413, detail_says=str(limit)))
