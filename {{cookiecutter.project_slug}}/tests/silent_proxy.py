"""A TCP proxy in front of PostgreSQL that can fall silent: from then on it passes no byte either
way and closes no socket, which is how a half-open connection looks from the client (the
database's host gone, a NAT or firewall entry dropped): no error, no answer, ever. `cut` closes
every socket and refuses new ones instead: the database gone, and the client told so."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from urllib.parse import urlsplit, urlunsplit


class SilentProxy:
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._silent = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._relays: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def fall_silent(self) -> None:
        self._silent.set()

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._relays:
            task.cancel()
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._relays, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        self._writers += [writer, upstream_writer]
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            relay = asyncio.create_task(self._relay(source, sink))
            self._relays.add(relay)

    async def _relay(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(65536):
            if self._silent.is_set():
                await asyncio.Future()  # holds the sockets open, passes nothing, until cut
            sink.write(data)
            await sink.drain()
        sink.close()


@asynccontextmanager
async def silent_proxy(database_url: str) -> AsyncIterator[tuple[SilentProxy, str]]:
    """A proxy in front of `database_url`'s server, and the URL that goes through it."""
    parts = urlsplit(database_url)
    proxy = SilentProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    await proxy.start()
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{proxy.port}" if credentials else f"127.0.0.1:{proxy.port}"
    try:
        yield proxy, urlunsplit(parts._replace(netloc=netloc))
    finally:
        with suppress(Exception):
            await proxy.cut()
