"""Idempotency-Key against the real server process: a create whose answer never reached the
client, and a server killed once the create committed, are each retried into exactly one row."""

import asyncio
import json
import secrets
import signal
import socket
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from {{ cookiecutter.package_name }}.kit.idempotency import HEADER, REPLAYED

from ..conftest import BASE, count_rows, serve_process
from ..declared import new_body


def send_and_hang_up(base: str, body: bytes, headers: dict[str, str]) -> None:
    """POST `body` on a raw connection and close it before reading a byte of the answer."""
    url = urlsplit(base)
    lines = [
        f"POST {BASE} HTTP/1.1",
        f"Host: {url.netloc}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    with socket.create_connection((url.hostname, url.port)) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)


async def until_rows(database_url: str, count: int) -> None:
    """Wait (5 s at most) until the first resource's table holds `count` rows."""
    for _ in range(500):
        if await count_rows(database_url) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the table never reached {count} rows")


async def test_a_create_whose_answer_was_lost_is_answered_on_retry_with_one_row(
    served_url: str, database_url: str, auth_headers: dict[str, str]
) -> None:
    body = json.dumps(new_body()).encode()
    headers = {**auth_headers, HEADER: "lost-" + secrets.token_hex(8)}
    before = await count_rows(database_url)
    send_and_hang_up(served_url, body, headers)
    await until_rows(database_url, before + 1)  # committed; its answer went to a closed socket
    async with httpx.AsyncClient(base_url=served_url, timeout=10) as client:
        retry = await client.post(
            BASE, content=body, headers={**headers, "Content-Type": "application/json"}
        )
    assert retry.status_code == 201, retry.text
    assert retry.headers[REPLAYED] == "true"
    assert retry.headers["location"] == f"{BASE}/{retry.json()['id']}"
    assert await count_rows(database_url) == before + 1


async def test_a_server_killed_after_the_create_committed_leaves_a_key_the_retry_honours(
    database_url: str, auth_env: dict[str, str], auth_headers: dict[str, str], tmp_path: Path
) -> None:
    env = {**auth_env, "DATABASE_URL": database_url}
    body = json.dumps(new_body()).encode()
    headers = {**auth_headers, HEADER: "killed-" + secrets.token_hex(8)}
    before = await count_rows(database_url)
    with serve_process(tmp_path / "first.log", **env) as (base, process):
        send_and_hang_up(base, body, headers)
        await until_rows(database_url, before + 1)
        process.send_signal(signal.SIGKILL)  # between the commit and (maybe) the answer
        process.wait(timeout=10)
    with serve_process(tmp_path / "second.log", **env) as (base, _):
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            retry = await client.post(
                BASE, content=body, headers={**headers, "Content-Type": "application/json"}
            )
    # The key committed with the row: the retry is answered from it, and writes nothing.
    assert retry.status_code == 201, retry.text
    assert retry.headers[REPLAYED] == "true"
    assert await count_rows(database_url) == before + 1
