"""A minimal keep-alive HTTP/1.1 client on asyncio streams: the load engine's wire.

Why not httpx or aiohttp: a load generator must spend far less CPU per request than the server it
measures, and httpx tops out near 1,000 requests per second per process, the service's own speed.
This client builds each request as bytes, reads the status line, Content-Length and the body, and
nothing else; it speaks only to servers that send Content-Length (uvicorn does).
"""

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence

from ..plan import RANDOM_BELOW, UNIQUE_RANGE, Mix, Operation, parts, render

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


def _request(method: str, target: str, body: bytes | None = None, extra: str = "") -> bytes:
    head = f"{method} {target} HTTP/1.1\r\nHost: loadtest\r\n{extra}"
    if body is None:
        return f"{head}\r\n".encode()
    return (
        f"{head}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def build_op(
    operation: Operation,
    ids: Mapping[str, Sequence[int]],
    headers: Mapping[str, str] | None = None,
) -> Op:
    """The request factory of one operation of the scenario table (loadtest/plan/scenarios.py), each
    request carrying `headers` (loadtest/plan/headers.py checked them: one line each) and the
    operation's own, rendered per request (a fresh Idempotency-Key); `{id}` draws
    from the seeded ids of the operation's resource, `ids[operation.resource]`."""
    if operation.consumes_id:
        raise ValueError(f"{operation.name} uses each id once; the engine draws ids at random")
    path = parts(operation.path)
    body = parts(operation.body) if operation.body is not None else None
    method, status = operation.method, operation.status
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    own = [(name, parts(template)) for name, template in operation.headers]
    if len(path) == 1 and body is None and not own:
        fixed = _request(method, path[0], extra=extra)
        return lambda rng: (fixed, status)

    seeded = ids.get(operation.resource, ())
    if "id" in path[1::2] and not seeded:
        raise ValueError(f"{operation.name} needs seeded ids of {operation.resource!r}")

    def request(rng: random.Random) -> tuple[bytes, int]:
        def value(name: str) -> int:
            if name == "id":
                return rng.choice(seeded)
            return rng.randrange(*UNIQUE_RANGE) if name == "u" else rng.randrange(RANDOM_BELOW)

        content = render(body, value).encode() if body is not None else None
        sent = extra + "".join(f"{name}: {render(split, value)}\r\n" for name, split in own)
        return _request(method, render(path, value), content, sent), status

    return request


def build_mix(
    mix: Mix, ids: Mapping[str, Sequence[int]], headers: Mapping[str, str] | None = None
) -> Op:
    """One op that picks among weighted ops, e.g. SCENARIOS["items.mixed"]: by id 80, patch 20."""
    ops = [build_op(operation, ids, headers) for operation, _ in mix]
    if len(ops) == 1:
        return ops[0]
    weights = [weight for _, weight in mix]
    return lambda rng: rng.choices(ops, weights)[0](rng)
