"""CPU per request head: uvicorn's HttpToolsProtocol against the service's GuardedHttpToolsProtocol
(the head deadline and size limit), parsing the same 4-header GET, no I/O, interleaved.

    taskset -c 0 .venv/bin/python -m bench.request_head [--project <baked project>]

Without --project it bakes the default service into a temporary folder. The package, and the
modules defining `guarded_protocol` and `Settings`, are found in the bake, whatever its name.
"""

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from bench.bakes import load_defining
from tests.baking import bake

ROUNDS, HEADS_PER_ROUND = 15, 20_000
REQUEST = (
    b"GET /items/12345 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n"
)


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


def guarded_protocol_of(project: Path) -> type[HttpToolsProtocol]:
    """The bake's protocol class, built from its development settings."""
    server = load_defining(project, "guarded_protocol")
    settings = load_defining(project, "Settings")
    protocol: type[HttpToolsProtocol] = server.guarded_protocol(settings.Settings(app_env="dev"))
    return protocol


async def measure(classes: dict[str, type[HttpToolsProtocol]]) -> dict[str, list[float]]:
    """Microseconds per request head, one figure per class and round."""
    loop = asyncio.get_running_loop()
    config = Config(app, lifespan="off", log_level="warning")
    config.load()
    results: dict[str, list[float]] = {name: [] for name in classes}
    for _ in range(ROUNDS):
        for name, cls in classes.items():
            proto = cls(config=config, server_state=ServerState(), app_state={}, _loop=loop)
            proto._start_asgi_task = lambda cycle, app: None  # type: ignore[method-assign]
            proto.connection_made(Transport())
            start = time.perf_counter()
            for _ in range(HEADS_PER_ROUND):
                proto.data_received(REQUEST)
                proto.cycle.response_complete = True  # answered: the next head starts a new cycle
            results[name].append((time.perf_counter() - start) / HEADS_PER_ROUND * 1e6)
            proto.connection_lost(None)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", type=Path, help="a baked project (default: bake one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="request-head-") as scratch:
        project = args.project or bake(Path(scratch))
        classes: dict[str, type[HttpToolsProtocol]] = {
            "stock": HttpToolsProtocol,
            "guarded": guarded_protocol_of(project),
        }
        results = asyncio.run(measure(classes))
    for name, values in results.items():
        print(
            f"{name}: median {statistics.median(values):.2f} us per request head"
            f" (min {min(values):.2f}, max {max(values):.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
