"""answer_key.py: which INSERT statements are made to store their answer, and how; what the
made statement stores is tested through the app (tests/kit/test_idempotency.py)."""

import pytest

from {{ cookiecutter.package_name }}.kit.answer_key import AnswerKey, NotComposable, compose

INSERT = """
    WITH new AS (
        INSERT INTO things (name, note)
        SELECT name, note FROM json_populate_record(NULL::things, $1::json)
        RETURNING id, name, note, version
    )
    SELECT id, version, row_to_json(new.*)::text AS body FROM new
"""


def test_the_answer_comes_from_the_statements_own_select_with_parameters_after_its_own() -> None:
    statement = compose(INSERT)
    head, _, tail = statement.partition("idempotency_answer AS (")
    assert head.rstrip().endswith("RETURNING id, name, note, version\n    ),")
    assert tail.lstrip().startswith("SELECT id, version, row_to_json(new.*)::text AS body FROM new")
    assert [f"${n}" in statement for n in range(1, 10)] == [True] * 8 + [False]
    assert "INSERT INTO idempotency_keys" in statement
    assert statement.rstrip().endswith("SELECT * FROM idempotency_answer")


@pytest.mark.parametrize(
    "inside",
    [
        "SELECT 'SELECT (' AS quoted",
        'SELECT 1 AS "SELECT"',
        "SELECT 1 -- SELECT (\n",
        "SELECT /* ) SELECT */ 1",
    ],
    ids=["a string", "a quoted name", "a line comment", "a block comment"],
)
def test_a_select_in_parentheses_quotes_or_comments_is_not_the_answer(inside: str) -> None:
    statement = compose(f"WITH a AS ({inside}), b AS (SELECT (SELECT 2)) SELECT * FROM a, b")
    assert "idempotency_answer AS (\n        SELECT * FROM a, b\n    )" in statement


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO things (name) VALUES ($1) RETURNING id",
        "WITH a AS (SELECT 1) INSERT INTO things SELECT * FROM a",
        "WITH a AS (SELECT 'unterminated) SELECT 1",
    ],
    ids=["no WITH", "no SELECT answers it", "an unterminated quote"],
)
def test_another_statement_is_not_composable(statement: str) -> None:
    with pytest.raises(NotComposable):
        compose(statement)


def test_a_key_that_cannot_store_its_answer_says_so_each_time_and_is_not_used() -> None:
    key = AnswerKey("client", "key", b"fingerprint", 60.0, "/things")
    for _ in range(2):
        with pytest.raises(NotComposable):
            key.storing("INSERT INTO things DEFAULT VALUES")
    assert key.insert is None
    statement, values = key.storing(INSERT)
    assert key.insert == INSERT
    assert values == ("client", "key", b"fingerprint", 201, "/things/", "application/json", 60.0)
    assert statement == compose(INSERT)
