"""idempotency.py: a create sent with an Idempotency-Key, through the app on a real PostgreSQL
(the first resource of serving/resources.py, bodies from its declaration)."""

import asyncio
import json
import secrets
from typing import Any

import asyncpg
import httpx
import pytest

{%- if cookiecutter.auth == "jwt" %}
from loadtest.drive.issuer import Issuer
{%- endif %}

from {{ cookiecutter.package_name }}.db import Database, NoResetConnection
from {{ cookiecutter.package_name }}.kit import answer_key
from {{ cookiecutter.package_name }}.kit.answer_key import AnswerKey, NotComposable
{%- if cookiecutter.auth == "api_key" %}
from {{ cookiecutter.package_name }}.kit.auth import digest
{%- endif %}
from {{ cookiecutter.package_name }}.kit.idempotency import (
    BATCH,
    DELETE_EXPIRED,
    HEADER,
    REPLAYED,
    remove_expired_keys,
)
from {{ cookiecutter.package_name }}.serving import app as app_module
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import (
{%- if cookiecutter.auth == "api_key" %}
    API_KEY,
{%- endif %}
    BASE,
{%- if cookiecutter.auth == "jwt" %}
    READ_SCOPE,
    WRITE_SCOPE,
{%- endif %}
    assert_problem,
    count_rows,
    started,
)
from ..declared import new_body, run_sql
{%- if cookiecutter.auth == "jwt" %}

SCOPES = f"{READ_SCOPE} {WRITE_SCOPE}"
{%- endif %}


def fresh_key() -> str:
    return "key-" + secrets.token_hex(8)


async def keys_named(database_url: str, key: str) -> int:
    count: int = await run_sql(
        database_url, "SELECT count(*) FROM idempotency_keys WHERE key = $1", key
    )
    return count


async def expire(database_url: str, key: str) -> None:
    await run_sql(
        database_url,
        "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1",
        key,
    )


async def test_a_retried_create_gets_the_first_answer_again_and_writes_one_row(
    client: httpx.AsyncClient, database_url: str
) -> None:
    body, key = new_body(), fresh_key()
    before = await count_rows(database_url)
    first = await client.post(BASE, json=body, headers={HEADER: key})
    retry = await client.post(BASE, json=body, headers={HEADER: key})
    assert first.status_code == retry.status_code == 201, retry.text
    assert retry.content == first.content
    for name in ("location", "etag", "content-type"):
        assert retry.headers[name] == first.headers[name]
    assert REPLAYED.lower() not in first.headers
    assert retry.headers[REPLAYED] == "true"
    assert await count_rows(database_url) == before + 1


async def test_a_create_without_the_header_stores_no_key_and_is_never_replayed(
    client: httpx.AsyncClient, database_url: str
) -> None:
    stored = await run_sql(database_url, "SELECT count(*) FROM idempotency_keys")
    body = new_body()
    first, second = [await client.post(BASE, json=body) for _ in range(2)]
    assert first.status_code == 201, first.text
    assert second.status_code in (201, 409)  # a second row, or a unique field taken
    assert REPLAYED.lower() not in second.headers
    assert await run_sql(database_url, "SELECT count(*) FROM idempotency_keys") == stored


async def test_the_same_key_with_another_body_is_422_and_writes_nothing(
    client: httpx.AsyncClient, database_url: str
) -> None:
    key = fresh_key()
    body = new_body()
    assert (await client.post(BASE, json=body, headers={HEADER: key})).status_code == 201
    before = await count_rows(database_url)
    # Another body: fresh values where the fields allow them; else the same written otherwise (a
    # resource whose one field is an enum of one choice has one body), as the key holds its bytes.
    another = new_body()
    sent = json.dumps(another, indent=None if another != body else 1)
    other = await client.post(
        BASE, content=sent, headers={HEADER: key, "content-type": "application/json"}
    )
    assert HEADER in assert_problem(other, 422)["detail"]
    assert await count_rows(database_url) == before


@pytest.mark.parametrize(
    "key", ["", "has space", "caf\u00e9", "tab\there", "k" * 256], ids=lambda key: repr(key)[:12]
)
async def test_a_malformed_or_over_long_key_is_400_naming_the_header(
    client: httpx.AsyncClient, database_url: str, key: str
) -> None:
    before = await count_rows(database_url)
    response = await client.post(
        BASE, json=new_body(), headers={HEADER.encode(): key.encode("latin-1")}
    )
    assert HEADER in assert_problem(response, 400)["detail"]
    assert await count_rows(database_url) == before


async def test_whitespace_around_a_key_is_not_part_of_it(client: httpx.AsyncClient) -> None:
    # RFC 9110 §5.5 (a trailing space was a 400): "k  " and "k" are one key.
    key, body = fresh_key(), new_body()
    first = await client.post(BASE, json=body, headers={HEADER: key + "   "})
    retry = await client.post(BASE, json=body, headers={HEADER: "\t" + key})
    assert first.status_code == 201, first.text
    assert retry.headers.get(REPLAYED) == "true"
    assert retry.json() == first.json()


async def test_a_key_of_255_visible_characters_is_accepted(client: httpx.AsyncClient) -> None:
    key = (fresh_key() + "!~" * 200)[:255]
    response = await client.post(BASE, json=new_body(), headers={HEADER: key})
    assert response.status_code == 201, response.text


async def test_concurrent_creates_with_one_key_write_one_row(
    client: httpx.AsyncClient, database_url: str
) -> None:
    body, key = new_body(), fresh_key()
    before = await count_rows(database_url)
    answers = await asyncio.gather(
        *(client.post(BASE, json=body, headers={HEADER: key}) for _ in range(8))
    )
    written = [a for a in answers if a.status_code == 201 and REPLAYED.lower() not in a.headers]
    assert len(written) == 1
    for answer in answers:
        if answer is not written[0] and answer.status_code == 201:
            assert answer.headers[REPLAYED] == "true"
            assert answer.content == written[0].content
        elif answer is not written[0]:
            assert_problem(answer, 409)
            assert answer.headers["retry-after"] == "1"
    assert await count_rows(database_url) == before + 1


async def test_a_retry_while_the_first_is_still_running_is_409(
    client: httpx.AsyncClient, database_url: str
) -> None:
    key = fresh_key()
    assert (await client.post(BASE, json=new_body(), headers={HEADER: key})).status_code == 201
    client_id = await run_sql(
        database_url, "SELECT client FROM idempotency_keys WHERE key = $1", key
    )
    running = fresh_key()
    holder = await asyncpg.connect(database_url)
    try:
        async with holder.transaction():  # holds the key's lock as a create in progress does
            await holder.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1 || ' ' || $2, 0))",
                client_id,
                running,
            )
            response = await client.post(BASE, json=new_body(), headers={HEADER: running})
    finally:
        await holder.close()
    assert HEADER in assert_problem(response, 409)["detail"]
    assert await keys_named(database_url, running) == 0


async def test_an_expired_key_is_free_again(client: httpx.AsyncClient, database_url: str) -> None:
    body, key = new_body(), fresh_key()
    first = await client.post(BASE, json=body, headers={HEADER: key})
    await expire(database_url, key)
    again = await client.post(BASE, json=body, headers={HEADER: key})
    assert again.status_code in (201, 409)  # run again: a new row, or a unique field taken
    assert REPLAYED.lower() not in again.headers
    assert again.content != first.content
    replay = await client.post(BASE, json=body, headers={HEADER: key})
    assert replay.headers.get(REPLAYED) == ("true" if again.status_code == 201 else None)


async def test_a_retry_of_an_expired_key_the_sweep_is_deleting_waits_and_runs_again(
    client: httpx.AsyncClient, database_url: str
) -> None:
    # The sweep holds the expired row (its batch deleted, not committed) when the retry comes:
    # the retry's statement waits for it on the key's index, then writes the row and the key.
    body, key = new_body(), fresh_key()
    first = await client.post(BASE, json=body, headers={HEADER: key})
    assert first.status_code == 201, first.text
    await expire(database_url, key)
    before = await count_rows(database_url)
    sweep = await asyncpg.connect(database_url)
    try:
        async with sweep.transaction():
            assert await sweep.execute(DELETE_EXPIRED) != "DELETE 0"
            # The same key on a body of its own: the first row stays, and a unique field would
            # refuse its values again (409) before the key is reached.
            again = new_body()
            retry = asyncio.ensure_future(client.post(BASE, json=again, headers={HEADER: key}))
            waiting = """SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid)
                          WHERE NOT granted AND datname = current_database()
                            AND query LIKE '%idempotency_keys%'"""
            for _ in range(500):  # 5 s at most
                if await sweep.fetchval(waiting):
                    break
                await asyncio.sleep(0.01)
            else:
                raise AssertionError("the retry did not wait for the sweep's lock")
        answer = await retry
    finally:
        await sweep.close()
    assert answer.status_code == 201, answer.text
    assert REPLAYED.lower() not in answer.headers
    assert answer.content != first.content
    assert await count_rows(database_url) == before + 1
    assert await keys_named(database_url, key) == 1


async def test_expired_keys_are_removed_in_batches_and_live_ones_kept(
    settings: Settings, client: httpx.AsyncClient, database_url: str
) -> None:
    live = fresh_key()
    assert (await client.post(BASE, json=new_body(), headers={HEADER: live})).status_code == 201
    await run_sql(
        database_url,
        """INSERT INTO idempotency_keys (client, key, fingerprint, status, body, expires_at)
           SELECT 'expired', 'k' || n, '', 201, '', now() - interval '1 hour'
             FROM generate_series(1, $1) AS n""",
        BATCH + 1,
    )
    database = await Database.connect(settings, "test")
    try:
        assert await remove_expired_keys(database) >= BATCH + 1
    finally:
        await database.close()
    expired = "SELECT count(*) FROM idempotency_keys WHERE expires_at <= now()"
    assert await run_sql(database_url, expired) == 0
    assert await keys_named(database_url, live) == 1


async def test_the_lifespan_removes_expired_keys(settings: Settings, database_url: str) -> None:
    key = fresh_key()
    await run_sql(
        database_url,
        """INSERT INTO idempotency_keys (client, key, fingerprint, status, body, expires_at)
           VALUES ('expired', $1, '', 201, '', now() - interval '1 hour')""",
        key,
    )
    async with started(create_app(settings)):
        for _ in range(500):  # the sweep runs as the app starts; 5 s at most
            if await keys_named(database_url, key) == 0:
                break
            await asyncio.sleep(0.01)
    assert await keys_named(database_url, key) == 0


{%- if cookiecutter.auth == "jwt" %}


async def test_a_key_is_kept_per_subject_so_another_client_gets_no_answer_of_it(
    client: httpx.AsyncClient, issuer: Issuer
) -> None:
    body, key = new_body(), fresh_key()
    first = await client.post(BASE, json=body, headers={HEADER: key})
    other = {"Authorization": f"Bearer {issuer.token(sub='user-2', scope=SCOPES)}", HEADER: key}
    answer = await client.post(BASE, json=body, headers=other)
    assert answer.status_code in (201, 409)  # its own create: a new row, or a unique field taken
    assert REPLAYED.lower() not in answer.headers
    assert answer.content != first.content


async def test_a_retry_with_a_refreshed_token_of_the_same_subject_is_answered(
    client: httpx.AsyncClient, issuer: Issuer
) -> None:
    body, key = new_body(), fresh_key()
    first = await client.post(BASE, json=body, headers={HEADER: key})
    refreshed = {"Authorization": f"Bearer {issuer.token(scope=SCOPES, lifetime=900)}", HEADER: key}
    retry = await client.post(BASE, json=body, headers=refreshed)
    assert retry.headers[REPLAYED] == "true"
    assert retry.content == first.content
{%- elif cookiecutter.auth == "api_key" %}


async def test_a_key_is_kept_per_api_key_so_another_client_gets_no_answer_of_it(
    database_url: str,
) -> None:
    other_key = "other-" + secrets.token_urlsafe(24)
    settings = Settings(
        database_url=database_url,
        app_env="test",
        api_key_hashes=[digest(API_KEY), digest(other_key)],
    )
    body, key = new_body(), fresh_key()
    async with started(create_app(settings)) as client:
        first = await client.post(BASE, json=body, headers={"X-API-Key": API_KEY, HEADER: key})
        answer = await client.post(BASE, json=body, headers={"X-API-Key": other_key, HEADER: key})
        retry = await client.post(BASE, json=body, headers={"X-API-Key": API_KEY, HEADER: key})
    assert first.status_code == 201, first.text
    assert answer.status_code in (201, 409)  # its own create: a new row, or a unique field taken
    assert REPLAYED.lower() not in answer.headers
    assert answer.content != first.content
    assert retry.headers[REPLAYED] == "true"
{%- endif %}


def _logged(statements: list[str]) -> type[NoResetConnection]:
    """The pool's connection class, noting every statement it runs in `statements`."""

    class Logged(NoResetConnection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.add_query_logger(lambda record: statements.append(record.query))

    return Logged


async def test_a_create_with_a_fresh_key_is_one_statement_that_stores_its_answer(
    settings: Settings,
    auth_headers: dict[str, str],
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    statements: list[str] = []
    monkeypatch.setattr(app_module, "_connection_class", lambda tracing: _logged(statements))
    body, key = new_body(), fresh_key()
    async with started(create_app(settings), auth_headers) as client:
        await asyncio.sleep(0)  # the lifespan's first sweep of expired keys, before counting
        statements.clear()
        first = await client.post(BASE, json=body, headers={HEADER: key})
        await asyncio.sleep(0)  # asyncpg calls its query loggers soon, not at once
        written = [statement for statement in statements if "DELETE" not in statement]
        retry = await client.post(BASE, json=body, headers={HEADER: key})
    assert first.status_code == 201, first.text
    assert len(written) == 1  # no BEGIN, lock, lookup or second INSERT of its own
    assert "idempotency_keys" in written[0]
    assert retry.headers[REPLAYED] == "true"
    assert retry.content == first.content


async def test_an_insert_that_cannot_store_its_answer_runs_in_a_transaction(
    settings: Settings,
    auth_headers: dict[str, str],
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(insert: str) -> str:
        raise NotComposable("not this one")

    monkeypatch.setattr(answer_key, "compose", refused)
    monkeypatch.setattr(answer_key, "_composed", {})
    statements: list[str] = []
    monkeypatch.setattr(app_module, "_connection_class", lambda tracing: _logged(statements))
    body, key = new_body(), fresh_key()
    before = await count_rows(database_url)
    async with started(create_app(settings), auth_headers) as client:
        first = await client.post(BASE, json=body, headers={HEADER: key})
        retry = await client.post(BASE, json=body, headers={HEADER: key})
        await asyncio.sleep(0)  # asyncpg calls its query loggers soon, not at once
    assert first.status_code == 201, first.text
    assert retry.headers[REPLAYED] == "true"
    assert await count_rows(database_url) == before + 1
    assert any(statement.startswith("BEGIN") for statement in statements)


async def test_a_statement_postgresql_refuses_sends_the_creates_the_transactional_way(
    settings: Settings,
    auth_headers: dict[str, str],
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A composed statement whose answer PostgreSQL cannot store (a text body into bytea): each
    # create still answers, and after the first none tries the statement again.
    compose = answer_key.compose

    def refused(insert: str) -> str:
        return compose(insert).replace("convert_to(answer.body, 'UTF8')", "answer.body")

    monkeypatch.setattr(answer_key, "compose", refused)
    monkeypatch.setattr(answer_key, "_composed", {})
    body, key = new_body(), fresh_key()
    before = await count_rows(database_url)
    async with started(create_app(settings), auth_headers) as client:
        first = await client.post(BASE, json=body, headers={HEADER: key})
        retry = await client.post(BASE, json=body, headers={HEADER: key})
        other = await client.post(BASE, json=new_body(), headers={HEADER: fresh_key()})
    assert first.status_code == other.status_code == 201, first.text
    assert retry.headers[REPLAYED] == "true"
    assert retry.content == first.content
    assert await count_rows(database_url) == before + 2
    assert list(answer_key._composed.values()) == [None]  # forgotten, not composed again


async def test_an_insert_that_ignores_its_key_is_an_error_not_a_create_without_one(
    settings: Settings, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a create whose insert drops its AnswerKey would do: write the row alone.
    monkeypatch.setattr(AnswerKey, "storing", lambda self, insert: (insert, ()))
    async with started(create_app(settings), auth_headers) as client:
        response = await client.post(BASE, json=new_body(), headers={HEADER: fresh_key()})
    assert_problem(response, 500)


async def test_openapi_declares_the_header_on_create(client: httpx.AsyncClient) -> None:
    operation = (await client.get("/openapi.json")).json()["paths"][BASE]["post"]
    header = next(p for p in operation["parameters"] if p["name"] == HEADER)
    assert header["in"] == "header"
    assert header["required"] is False
    assert {"400", "409", "422"} <= set(operation["responses"])
