"""The webhook's HTTP client pays no import on each request."""

import asyncio
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

import httpx

ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"


class ImportsSeen(importlib.abc.MetaPathFinder):
    """Records every module name the import system looks for; finds none itself."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        self.names.append(fullname)
        return None


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(ANSWER)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def test_a_delivery_looks_for_no_module() -> None:
    """httpcore asks which async library runs on every request, by importing sniffio; when sniffio
    is not installed that import fails each time, and a failed import is never cached: it searched
    the whole path on every delivery, a quarter of the worker's CPU per event in `make
    bench-jobs`. anyio no longer brings sniffio (4.11), so pyproject.toml names it."""
    server = await asyncio.start_server(_answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    seen = ImportsSeen()
    try:
        async with httpx.AsyncClient() as client:
            await client.post(url, content=b"{}")  # the first request's imports are once only
            sys.meta_path.insert(0, seen)
            try:
                for _ in range(3):
                    await client.post(url, content=b"{}")
            finally:
                sys.meta_path.remove(seen)
    finally:
        server.close()
        await server.wait_closed()
    assert seen.names == []
