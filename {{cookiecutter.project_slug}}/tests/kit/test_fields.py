"""kit/fields.py: an integer field (int, bigint, money) takes a number written as an integer and
nothing else. A number written with a fraction or an exponent is a 422 naming the field, on a
create and on a change, and writes nothing, even when its float is whole: 0.99999999999999999
parses as 1.0 and would be stored as 1."""

import json

import httpx
import pytest

from {{ cookiecutter.package_name }}.kit import Resource, field_type
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES

from ..conftest import assert_problem
from ..declared import created, new_body, rows_in

WRITTEN = ["0.99999999999999999", "41.99999999999999999", "4466.0", "1e2", "1E0", "-0.0", "2.5e1"]
INTEGER_KINDS = ("int", "bigint", "money")
INTEGER_FIELDS = [
    (resource, name)
    for resource in RESOURCES
    for name, info in resource.fields.model_fields.items()
    if (marker := field_type(info.metadata)) is not None and marker.kind in INTEGER_KINDS
]
JSON_TYPE = {"Content-Type": "application/json"}


def _written(body: dict[str, object], name: str, number: str) -> bytes:
    """`body` as JSON with the field `name` written as the text `number`."""
    placeholder = "\x00number\x00"
    text = json.dumps({**body, name: placeholder})
    return text.replace(json.dumps(placeholder), number).encode()


def _assert_names(response: httpx.Response, name: str) -> None:
    problem = assert_problem(response, 422)
    assert name in [error["field"] for error in problem["errors"]], problem
    assert name in problem["detail"]


@pytest.mark.skipif(not INTEGER_FIELDS, reason="no resource declares an integer field")
@pytest.mark.parametrize(
    ("resource", "name"), INTEGER_FIELDS, ids=[f"{r.table}.{n}" for r, n in INTEGER_FIELDS]
)
@pytest.mark.parametrize("number", WRITTEN)
async def test_a_number_written_with_a_fraction_or_an_exponent_is_422_naming_the_integer_field(
    client: httpx.AsyncClient, database_url: str, resource: Resource, name: str, number: str
) -> None:
    before = await rows_in(database_url, resource.table)
    body = _written(new_body(resource), name, number)
    _assert_names(await client.post(resource.prefix, content=body, headers=JSON_TYPE), name)
    assert await rows_in(database_url, resource.table) == before
    row = await created(client, resource)
    change = _written({}, name, number)
    path = f"{resource.prefix}/{row['id']}"
    _assert_names(await client.patch(path, content=change, headers=JSON_TYPE), name)
    assert (await client.get(path)).json() == row
