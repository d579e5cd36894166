"""worker/webhook.py: only a 2xx delivers an event, and its status alone (the body is never
read). A redirect or a 408 is retried and then held as failed, with its status in the log; a
delivery is cut at WEBHOOK_TIMEOUT_SECONDS however its receiver trickles the answer, and retried."""

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
import pytest
import structlog
from pgqueuer.errors import RetryRequested
from pgqueuer.models import Job
from pydantic import SecretStr

from {{ cookiecutter.package_name }}.kit.events import WEBHOOK, event_payload
from {{ cookiecutter.package_name }}.settings import Settings
from {{ cookiecutter.package_name }}.worker import webhook
from {{ cookiecutter.package_name }}.worker.webhook import DeliveryFailed, deliver

from .receiver import Receiver, receiving
from .workers import SECRET, clear_queue, enqueue_events, jobs_by_status, worker

TIMEOUT = 1.0  # WEBHOOK_TIMEOUT_SECONDS of these tests


@pytest.fixture(autouse=True)
def _logs_captured(monkeypatch: pytest.MonkeyPatch) -> None:
    # A logger used by an earlier test caches its configuration and would bypass the capture.
    monkeypatch.setattr(webhook, "logger", structlog.get_logger(webhook.__name__))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving(SECRET.encode()) as running:
        yield running


def _settings(settings: Settings, url: str) -> Settings:
    return settings.model_copy(
        update={
            "webhook_url": url,
            "webhook_secret": SecretStr(SECRET),
            "webhook_timeout_seconds": TIMEOUT,
            "webhook_max_attempts": 3,
        }
    )


def _job(attempts: int = 0) -> Job:
    now = datetime.now(UTC)
    return Job(
        id=1,
        priority=0,
        created=now,
        updated=now,
        heartbeat=now,
        execute_after=now,
        status="picked",
        entrypoint=WEBHOOK,
        payload=event_payload(str(uuid.uuid4()), "item.created", "{}"),
        attempts=attempts,
        queue_manager_id=None,
        headers=None,
    )


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_no_delivery_it_is_retried_then_held_with_its_status_logged(
    receiver: Receiver, settings: Settings, status: int
) -> None:
    receiver.status = status
    configured = _settings(settings, receiver.url)
    async with httpx.AsyncClient() as client:
        with structlog.testing.capture_logs() as logs:
            with pytest.raises(RetryRequested):
                await deliver(_job(attempts=0), client=client, settings=configured)
            with pytest.raises(DeliveryFailed):
                await deliver(_job(attempts=2), client=client, settings=configured)
    assert len(receiver.deliveries) == 2
    failed = [log for log in logs if log["event"] == "event_not_delivered"]
    assert [log["status"] for log in failed] == [status, status]
    assert failed[-1]["held_as_failed"] is True


async def test_a_2xx_delivers_the_event(receiver: Receiver, settings: Settings) -> None:
    receiver.status = 204
    async with httpx.AsyncClient() as client:
        await deliver(_job(), client=client, settings=_settings(settings, receiver.url))
    assert [delivery.signed for delivery in receiver.deliveries] == [True]


@pytest.mark.parametrize("status", [408, 429])
async def test_a_receiver_out_of_time_or_busy_gets_the_event_again(
    receiver: Receiver, settings: Settings, status: int
) -> None:
    # 408: the receiver (or a proxy before it) gave up waiting for the request, as a delivery
    # past WEBHOOK_TIMEOUT_SECONDS does: no refusal of the event.
    receiver.status = status
    async with httpx.AsyncClient() as client:
        with pytest.raises(RetryRequested):
            await deliver(_job(), client=client, settings=_settings(settings, receiver.url))


Answer = Callable[[asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def _receiver_answering(answer: Answer) -> AsyncIterator[str]:
    """A receiver that reads each request whole, then answers it with `answer`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            await reader.readexactly(length)
            await answer(writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/events"
    finally:
        server.close()


def _trickled(every: float) -> Answer:
    """An answer one byte every `every` seconds, the status line included: each read of the
    client's arrives well within its timeout, the answer never."""

    async def answer(writer: asyncio.StreamWriter) -> None:
        for byte in b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n".ljust(1000, b"x"):
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(every)

    return answer


async def test_a_2xx_delivers_the_event_without_its_body_being_read(settings: Settings) -> None:
    sent = 0

    async def endless(writer: asyncio.StreamWriter) -> None:
        # 200, then 64 MiB of body as fast as the client takes it.
        nonlocal sent
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % (64 << 20))
        for _ in range(64):
            writer.write(b"x" * (1 << 20))
            await writer.drain()
            sent += 1 << 20

    async with _receiver_answering(endless) as url, httpx.AsyncClient() as client:
        await deliver(_job(), client=client, settings=_settings(settings, url))
    # The status decides: a receiver's body, of any size, is not held in the worker's memory.
    assert sent < 32 << 20


async def test_deliveries_answered_with_a_short_body_share_one_connection(
    settings: Settings,
) -> None:
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = int(head.lower().partition(b"content-length:")[2].split(b"\r\n")[0])
                await reader.readexactly(length)
                writer.write(b'HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"ok":true}')
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/events"
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(3):
                await deliver(_job(), client=client, settings=_settings(settings, url))
    finally:
        server.close()
    assert connections == 1  # the answer's body is read, so its connection carries the next


async def test_a_receiver_trickling_its_answer_is_cut_at_the_timeout_and_the_event_retried(
    settings: Settings,
) -> None:
    async with (
        _receiver_answering(_trickled(every=TIMEOUT / 4)) as url,
        httpx.AsyncClient() as client,
    ):
        began = time.monotonic()
        with pytest.raises(RetryRequested):
            # Without one deadline for the whole delivery it lasts 1,000 x 0.25 s.
            await asyncio.wait_for(
                deliver(_job(), client=client, settings=_settings(settings, url)), 10 * TIMEOUT
            )
        took = time.monotonic() - began
    assert TIMEOUT <= took < 3 * TIMEOUT, took


async def test_a_worker_holds_an_event_answered_with_a_redirect_as_failed(
    connection: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    receiver.status = 308  # the receiver moved: every event would be lost as "delivered"
    await clear_queue(connection)
    try:
        await enqueue_events(connection, [str(uuid.uuid4())])
        env = {"WEBHOOK_MAX_ATTEMPTS": "2", "JOBS_POLL_SECONDS": "0.1"}
        with worker(tmp_path / "worker.log", database_url, receiver.url, **env):
            deadline = time.monotonic() + 30
            while (await jobs_by_status(connection)).get("failed") != 1:
                assert time.monotonic() < deadline, await jobs_by_status(connection)
                await asyncio.sleep(0.05)  # polling: the worker tells the test nothing
        assert await jobs_by_status(connection) == {"failed": 1}
        assert len(receiver.deliveries) == 2
        assert "308" in (tmp_path / "worker.log").read_text()
    finally:
        await clear_queue(connection)
