"""A local receiver of the worker's deliveries: answers 200 at once and keeps the event ids."""

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Receiver:
    url: str = ""
    event_ids: set[str] = field(default_factory=set)
    deliveries: int = 0
    first_at: float | None = None
    last_at: float | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _wanted: tuple[int, asyncio.Future[None]] | None = None

    def record(self, event_id: str, now: float) -> None:
        self.deliveries += 1
        self.event_ids.add(event_id)
        self.first_at = self.first_at if self.first_at is not None else now
        self.last_at = now
        wanted = self._wanted
        if wanted is not None and len(self.event_ids) >= wanted[0] and not wanted[1].done():
            wanted[1].set_result(None)

    def reset(self) -> None:
        self.event_ids, self.deliveries, self.first_at, self.last_at = set(), 0, None, None

    def wait_for(self, count: int, timeout: float) -> bool:
        """True once `count` distinct events arrived, within `timeout` seconds."""
        assert self._loop is not None

        async def wait() -> None:
            future = self._loop.create_future()  # type: ignore[union-attr]
            self._wanted = (count, future)
            if len(self.event_ids) >= count:
                future.set_result(None)
            await future

        try:
            asyncio.run_coroutine_threadsafe(wait(), self._loop).result(timeout)
        except TimeoutError:
            return False
        return True


async def _serve(receiver: Receiver, reader: Any, writer: Any) -> None:
    loop = asyncio.get_running_loop()
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length, event_id = 0, ""
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                lowered = name.strip().lower()
                if lowered == b"content-length":
                    length = int(value)
                elif lowered == b"idempotency-key":
                    event_id = value.strip().decode()
            await reader.readexactly(length)
            receiver.record(event_id, loop.time())
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver on 127.0.0.1 in a thread of its own, for the block's duration."""
    receiver = Receiver()
    loop = asyncio.new_event_loop()
    receiver._loop = loop
    started = threading.Event()
    server: list[asyncio.Server] = []

    async def start() -> None:
        server.append(
            await asyncio.start_server(
                lambda r, w: _serve(receiver, r, w), "127.0.0.1", 0, backlog=1024
            )
        )
        receiver.url = f"http://127.0.0.1:{server[0].sockets[0].getsockname()[1]}/events"
        started.set()

    thread = threading.Thread(
        target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True
    )
    thread.start()
    started.wait(10)
    try:
        yield receiver
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
