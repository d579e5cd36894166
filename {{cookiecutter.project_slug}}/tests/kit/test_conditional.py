"""Conditional requests (RFC 9110 section 13): the header rules on their own, then end to end.

If-Match on PATCH and DELETE uses strong comparison and takes a list or `*`; a tag that names no
current version is stale (412), however large. If-None-Match on GET answers 304 when it names the
current ETag. REQUIRE_IF_MATCH makes writes without If-Match a 428.
"""

import re
from collections.abc import AsyncIterator

import httpx
import pytest

from {{ cookiecutter.package_name }}.kit import conditional
from {{ cookiecutter.package_name }}.kit.problems import ProblemError
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, PROBLEM, TEMPLATE, assert_problem, create, started
from ..declared import change

WELL_FORMED = [
    '"1"',
    'W/"1"',
    '"1", "3"',
    '"1",W/"2"',
    " * ",
    '"", "x"',
    '"1", , "2"',
    ', "1"',
    '"\x80"',
]
MALFORMED = ["1", "W/1", '"1', "null", "**", '"1" "2"', 'w/"1"', '"a"b"', "", '"1";', '*, "1"']


@pytest.mark.parametrize("value", WELL_FORMED)
def test_well_formed_etag_lists_match_the_declared_pattern(value: str) -> None:
    assert re.fullmatch(conditional.IF_MATCH_PATTERN, value)


@pytest.mark.parametrize("value", MALFORMED)
def test_malformed_etag_lists_do_not_match_the_declared_pattern(value: str) -> None:
    assert re.fullmatch(conditional.IF_MATCH_PATTERN, value) is None


@pytest.mark.parametrize(
    ("header", "versions"),
    [
        (None, None),
        ("*", None),
        ('"7"', [7]),
        ('"1", "3"', [1, 3]),
        ('W/"2"', []),  # strong comparison: a weak tag never matches
        ('W/"2", "5"', [5]),
        ('"abc", "01", "-1", ""', []),  # tags this service never issues match nothing
        ('"9999999999"', [9999999999]),  # beyond integer, a version that may simply be stale
        ('"9223372036854775808"', []),  # beyond bigint: no row can be at it
        ('"99999999999999999999"', []),
    ],
)
def test_if_match_names_the_versions_a_write_may_apply_to(
    header: str | None, versions: list[int] | None
) -> None:
    lines = None if header is None else [header]
    assert conditional.versions_matching(lines, required=False) == versions


def test_a_required_if_match_that_is_missing_is_a_428() -> None:
    with pytest.raises(ProblemError) as raised:
        conditional.versions_matching(None, required=True)
    assert raised.value.status == 428
    assert conditional.versions_matching(["*"], required=True) is None


@pytest.mark.parametrize(
    ("header", "modified"),
    [
        (None, True),
        ('"3"', False),
        ('W/"3"', False),
        ('"1", "3"', False),
        ("*", False),
        ('"2"', True),
        ('"03"', True),
    ],
)
def test_if_none_match_uses_weak_comparison(header: str | None, modified: bool) -> None:
    assert conditional.none_match(None if header is None else [header], '"3"') is modified


def test_a_header_on_several_lines_is_one_list() -> None:
    assert conditional.versions_matching(['"1"', '"2", "3"'], required=False) == [1, 2, 3]
    assert conditional.versions_matching(['"1"', "*"], required=False) is None
    assert conditional.none_match(['"1"', 'W/"3"'], '"3"') is False


async def test_if_match_repeated_on_two_lines_names_the_versions_of_both(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    path = f"{BASE}/{created['id']}"
    # The current version ("1") only on the second line: read alone, the first line is stale.
    headers = [("if-match", '"7"'), ("if-match", '"1"')]
    response = await client.patch(path, json=change(), headers=headers)
    assert response.status_code == 200, response.text
    not_modified = await client.get(
        path, headers=[("if-none-match", '"9"'), ("if-none-match", '"2"')]
    )
    assert not_modified.status_code == 304


async def test_delete_with_a_stale_if_match_is_412_and_deletes_nothing(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    response = await client.delete(f"{BASE}/{created['id']}", headers={"if-match": '"99"'})
    assert response.status_code == 412
    assert response.headers["content-type"] == PROBLEM
    assert '"1"' in response.json()["detail"]
    assert (await client.get(f"{BASE}/{created['id']}")).status_code == 200


async def test_delete_with_the_current_if_match_deletes(client: httpx.AsyncClient) -> None:
    created = await create(client)
    response = await client.delete(f"{BASE}/{created['id']}", headers={"if-match": '"1"'})
    assert response.status_code == 204
    assert (await client.get(f"{BASE}/{created['id']}")).status_code == 404


async def test_delete_of_a_missing_row_with_if_match_is_404(client: httpx.AsyncClient) -> None:
    response = await client.delete(f"{BASE}/987654321", headers={"if-match": '"1"'})
    assert response.status_code == 404


async def test_patch_with_a_weak_if_match_of_the_current_version_is_412(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    response = await client.patch(
        f"{BASE}/{created['id']}", json=change(), headers={"if-match": 'W/"1"'}
    )
    assert response.status_code == 412
    assert (await client.get(f"{BASE}/{created['id']}")).json()["version"] == 1


async def test_patch_with_a_list_of_etags_succeeds_when_any_one_is_current(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    response = await client.patch(
        f"{BASE}/{created['id']}", json=change(), headers={"if-match": '"0", "1"'}
    )
    assert response.status_code == 200, response.text
    assert response.headers["etag"] == '"2"'


MALFORMED_IF_MATCH = ["1", '"1', "W/1", "null", '*, "1"']
# Well-formed tags that match no version, however large or odd: a failed precondition, not 422.
NO_SUCH_VERSION = ['"9999999999"', '"9300000000000000000"', '"99999999999999999999"', '"abc"']


@pytest.mark.parametrize(
    ("tag", "status"),
    [(tag, 400) for tag in MALFORMED_IF_MATCH] + [(tag, 412) for tag in NO_SUCH_VERSION],
)
async def test_patch_with_a_malformed_if_match_is_400_and_with_no_such_version_412(
    client: httpx.AsyncClient, tag: str, status: int
) -> None:
    created = await create(client)
    response = await client.patch(
        f"{BASE}/{created['id']}", json=change(), headers={"if-match": tag}
    )
    assert_problem(response, status)
    assert response.headers["content-type"] == PROBLEM


async def test_get_with_if_none_match_of_the_current_etag_is_304_without_a_body(
    client: httpx.AsyncClient,
) -> None:
    created = await create(client)
    response = await client.get(f"{BASE}/{created['id']}", headers={"if-none-match": '"1"'})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == '"1"'
    changed = await client.get(f"{BASE}/{created['id']}", headers={"if-none-match": '"0"'})
    assert changed.status_code == 200
    assert changed.json()["id"] == created["id"]


async def test_get_with_a_malformed_if_none_match_is_400_naming_it(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get(f"{BASE}/1", headers={"if-none-match": "null"})
    assert response.status_code == 400
    assert "If-None-Match" in response.json()["detail"]


@pytest.fixture(scope="module")
async def strict_client(
    settings: Settings, auth_headers: dict[str, str]
) -> AsyncIterator[httpx.AsyncClient]:
    """A service with REQUIRE_IF_MATCH on."""
    application = create_app(settings.model_copy(update={"require_if_match": True}))
    async with started(application, auth_headers) as http:
        yield http


async def test_require_if_match_refuses_blind_writes_with_428(
    strict_client: httpx.AsyncClient,
) -> None:
    created = await create(strict_client)
    path = f"{BASE}/{created['id']}"
    blind_patch = await strict_client.patch(path, json=change())
    blind_delete = await strict_client.delete(path)
    assert (blind_patch.status_code, blind_delete.status_code) == (428, 428)
    assert blind_patch.headers["content-type"] == PROBLEM
    assert (await strict_client.get(path)).json()["version"] == 1
    assert (
        await strict_client.patch(path, json=change(), headers={"if-match": '"1"'})
    ).status_code == 200
    assert (await strict_client.delete(path, headers={"if-match": "*"})).status_code == 204


async def test_if_match_pattern_and_statuses_are_in_the_openapi_document(
    client: httpx.AsyncClient,
) -> None:
    schema = (await client.get("/openapi.json")).json()
    item = schema["paths"][TEMPLATE]
    for method in ("patch", "delete"):
        header = next(p for p in item[method]["parameters"] if p["name"] == "if-match")
        # One line of text (kit/openapi.py), the list of tags its pattern allows.
        assert header["schema"]["type"] == "string"
        assert header["schema"]["pattern"] == conditional.IF_MATCH_PATTERN
        assert header["required"] is False
        assert {"412", "428"} <= item[method]["responses"].keys()
    assert "304" in item["get"]["responses"]
