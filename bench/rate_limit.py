"""The rate limiter's own CPU per request, with nothing else in the way.

Bakes the service (auth=none), imports its RateLimitMiddleware and drives it in-process around a
no-op ASGI app: the no-op app alone, the limiter keyed by the client's address, keyed by an API
key's SHA-256, and with the LRU full and a new client on every call (an eviction each time).
Interleaved rounds, medians of process_time, on the current core (run it under `taskset -c 0`).
The end-to-end price beside the other features is bench/features.py's `rate_limit` variants.
Run: `taskset -c 0 .venv/bin/python -m bench.rate_limit [--project <baked project>]`; without
--project it bakes the default service into a temporary folder.
"""

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bakes import load_defining
from tests.baking import bake

Scope = dict[str, Any]
_HEADERS = [(b"host", b"bench"), (b"user-agent", b"wrk")]
_KEY = (b"x-api-key", b"bench-api-key-0123456789")


async def _noop(scope: Scope, receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _receive() -> dict[str, str]:
    return {"type": "http.request"}


async def _send(message: dict[str, Any]) -> None:
    pass


def _scope(address: str, headers: list[tuple[bytes, bytes]]) -> Scope:
    return {"type": "http", "path": "/items/42", "headers": headers, "client": (address, 5000)}


def _address(n: int, first: int) -> str:
    return f"{first}.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


async def _per_call(app: Any, scopes: list[Scope]) -> float:
    started = time.process_time()
    for scope in scopes:
        await app(scope, _receive, _send)
    return (time.process_time() - started) / len(scopes) * 1e6


async def _measure(limiter: Any, metrics: Any, calls: int, rounds: int) -> dict[str, float]:
    def limited(**options: Any) -> Any:
        return limiter(_noop, rate=1e9, burst=10**9, metrics=metrics(), **options)

    by_address = limited(capacity=100_000)
    by_key = limited(capacity=100_000, credential_header=_KEY[0])
    full = limited(capacity=100_000)
    for n in range(100_000):  # fill the LRU
        await full(_scope(_address(n, 10), _HEADERS), _receive, _send)
    one_client = [_scope("203.0.113.9", _HEADERS)] * calls
    with_key = [_scope("203.0.113.9", [*_HEADERS, _KEY])] * calls
    times: dict[str, list[float]] = {}
    for round_ in range(rounds):
        new_clients = [_scope(_address(round_ * calls + n, 11), _HEADERS) for n in range(calls)]
        for name, app, scopes in (
            ("no-op app alone", _noop, one_client),
            ("keyed by address", by_address, one_client),
            ("keyed by API key digest", by_key, with_key),
            ("full LRU, a new client each call", full, new_clients),
        ):
            times.setdefault(name, []).append(await _per_call(app, scopes))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--project", type=Path, help="a baked project (default: bake one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rate-limit-") as scratch:
        project = args.project or bake(Path(scratch))
        limiter = load_defining(project, "RateLimitMiddleware").RateLimitMiddleware
        metrics = load_defining(project, "Metrics").Metrics
    medians = asyncio.run(_measure(limiter, metrics, args.calls, args.rounds))
    base = medians["no-op app alone"]
    print("| case | us per call | over the no-op app |\n|---|---|---|")
    for name, value in medians.items():
        print(f"| {name} | {value:.2f} | +{value - base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
