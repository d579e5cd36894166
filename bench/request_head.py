"""CPU per request head: uvicorn's HttpToolsProtocol against the service's GuardedHttpToolsProtocol
(server.py: head deadline and size limit), parsing the same 4-header GET, no I/O, interleaved.

    taskset -c 0 .venv/bin/python bench/request_head.py <baked project>/src
"""

import asyncio
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, sys.argv[1])
from inventory_service.server import guarded_protocol  # from the bake named above
from inventory_service.settings import Settings
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState


class Transport(asyncio.Transport):
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5555)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def app(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    pass


REQUEST = (
    b"GET /items/12345 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n"
)


async def main() -> None:
    loop = asyncio.get_running_loop()
    config = Config(app, lifespan="off", log_level="warning")
    config.load()
    classes: dict[str, type[HttpToolsProtocol]] = {
        "stock": HttpToolsProtocol,
        "guarded": guarded_protocol(Settings(app_env="dev")),
    }
    results: dict[str, list[float]] = {name: [] for name in classes}
    for _ in range(15):
        for name, cls in classes.items():
            proto = cls(config=config, server_state=ServerState(), app_state={}, _loop=loop)
            proto._start_asgi_task = lambda cycle, app: None  # type: ignore[method-assign]
            proto.connection_made(Transport())
            n = 20000
            start = time.perf_counter()
            for _ in range(n):
                proto.data_received(REQUEST)
                proto.cycle.response_complete = True  # answered: the next head starts a new cycle
            results[name].append((time.perf_counter() - start) / n * 1e6)
            proto.connection_lost(None)
    for name, values in results.items():
        print(
            f"{name}: median {statistics.median(values):.2f} us per request head"
            f" (min {min(values):.2f}, max {max(values):.2f})"
        )


asyncio.run(main())
