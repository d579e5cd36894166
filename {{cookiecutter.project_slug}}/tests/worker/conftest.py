"""Every worker a test starts gets the service's auth settings: a worker refuses to start without
them, as its pod would without the chart's (auth=jwt and auth=api_key bakes). `queue`: the queue
table to the test alone, emptied before and after."""

from collections.abc import AsyncIterator

import asyncpg
import pytest

from .workers import clear_queue


@pytest.fixture(autouse=True)
def _auth_in_the_environment(auth_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in auth_env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
async def queue(connection: asyncpg.Connection) -> AsyncIterator[asyncpg.Connection]:
    await clear_queue(connection)
    yield connection
    await clear_queue(connection)
