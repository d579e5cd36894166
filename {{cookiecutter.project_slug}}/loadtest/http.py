"""A minimal keep-alive HTTP/1.1 client on asyncio streams: the load engine's wire.

Why not httpx or aiohttp: a load generator must spend far less CPU per request than the server it
measures, and httpx tops out near 1,000 requests per second per process, the service's own speed.
This client builds each request as bytes, reads the status line, Content-Length and the body, and
nothing else; it speaks only to servers that send Content-Length (uvicorn does).
"""

import asyncio
import random
from collections.abc import Callable, Sequence

import orjson

Op = Callable[[random.Random], tuple[bytes, int]]  # a request's bytes and its expected status


class ProtocolError(Exception):
    pass


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bool]:
    """Send one request, read its whole response; the status and whether the server closes."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 "):
        raise ProtocolError(head[:40].decode(errors="replace"))
    status = int(head[9:12])
    lowered = head.lower()
    start = lowered.find(b"\r\ncontent-length:")
    if start >= 0:
        end = lowered.index(b"\r\n", start + 2)
        length = int(lowered[start + 17 : end])
        if length:
            await reader.readexactly(length)
    elif status not in (204, 304):
        raise ProtocolError("response without Content-Length")
    return status, b"\r\nconnection: close" in lowered


def _request(method: str, target: str, body: bytes | None = None) -> bytes:
    head = f"{method} {target} HTTP/1.1\r\nHost: loadtest\r\n"
    if body is None:
        return f"{head}\r\n".encode()
    return (
        f"{head}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def build_op(kind: str, prefix: str, ids: Sequence[int]) -> Op:
    """The request factory of one operation: a scenario's building block.

    Kinds: `by_id`, `page`, `create`, `patch`, or a literal `GET /path` for a fixed request.
    """
    if kind == "by_id":
        return lambda rng: (_request("GET", f"{prefix}/{rng.choice(ids)}"), 200)
    if kind == "page":
        return lambda rng: (_request("GET", f"{prefix}?limit=20&after={rng.choice(ids)}"), 200)
    if kind == "create":

        def create(rng: random.Random) -> tuple[bytes, int]:
            body = {"name": f"load {rng.randrange(10**9)}", "price_cents": rng.randrange(10**6)}
            return _request("POST", prefix, orjson.dumps(body)), 201

        return create
    if kind == "patch":

        def patch(rng: random.Random) -> tuple[bytes, int]:
            body = orjson.dumps({"quantity": rng.randrange(10**6)})
            return _request("PATCH", f"{prefix}/{rng.choice(ids)}", body), 200

        return patch
    method, _, target = kind.partition(" ")
    if method not in {"GET", "HEAD", "DELETE"} or not target.startswith("/"):
        raise ValueError(f"unknown operation {kind!r}")
    fixed = _request(method, target)
    return lambda rng: (fixed, 200)


def build_mix(mix: Sequence[tuple[str, int]], prefix: str, ids: Sequence[int]) -> Op:
    """One op that picks among weighted ops, e.g. [("by_id", 80), ("patch", 20)]."""
    ops = [build_op(kind, prefix, ids) for kind, _ in mix]
    if len(ops) == 1:
        return ops[0]
    weights = [weight for _, weight in mix]
    return lambda rng: rng.choices(ops, weights)[0](rng)
