"""Hostile If-Match and If-None-Match headers, one table: a malformed one is a 400 naming the
header, a well-formed one naming no current version a 412; none changes the table."""

import httpx
import pytest

from .hostile import Hostile, assert_refused_and_unchanged, if_match

HOSTILE = {
    "if-match-not-an-etag": if_match("PATCH", "yesterday", 400),
    "if-match-unquoted": if_match("PATCH", "1", 400),
    "if-match-null": if_match("PATCH", "null", 400),
    "if-match-weak-unquoted": if_match("PATCH", "W/1", 400),
    "if-match-star-in-a-list": if_match("PATCH", '*, "1"', 400),
    "if-match-lowercase-weak": if_match("PATCH", 'w/"1"', 400),
    "if-match-unterminated": if_match("PATCH", '"1', 400),
    "if-match-two-without-comma": if_match("PATCH", '"1" "2"', 400),
    "if-match-too-long": if_match("PATCH", ", ".join(['"1"'] * 400), 400),
    "delete-if-match-malformed": if_match("DELETE", "yesterday", 400),
    "if-none-match-null": if_match("GET", "null", 400, header="if-none-match"),
    # Well-formed tags naming no current version: stale, 412, whatever their size or strength.
    "if-match-huge-version": if_match("PATCH", '"99999999999999999999"', 412),
    "if-match-beyond-integer": if_match("PATCH", '"9999999999"', 412),
    "if-match-negative": if_match("PATCH", '"-1"', 412),
    "if-match-leading-zero": if_match("PATCH", '"01"', 412),
    "if-match-not-a-version": if_match("PATCH", '"abc"', 412),
    "if-match-weak-current": if_match("PATCH", 'W/"1"', 412),
    "if-match-list-none-current": if_match("PATCH", '"2", "3", W/"1"', 412),
    "delete-stale-if-match": if_match("DELETE", '"99"', 412),
    "delete-weak-if-match": if_match("DELETE", 'W/"1"', 412),
    "delete-huge-if-match": if_match("DELETE", '"99999999999999999999"', 412),
}


@pytest.mark.parametrize("case", list(HOSTILE.values()), ids=list(HOSTILE))
async def test_a_hostile_precondition_gets_a_4xx_problem_naming_it_and_changes_nothing(
    client: httpx.AsyncClient, database_url: str, existing_id: int, case: Hostile
) -> None:
    await assert_refused_and_unchanged(client, database_url, existing_id, case)
