"""X-Request-ID: keep a well-formed one from the caller or make one; the edge middleware (edge.py)
binds it to every log line of the request and echoes it back."""

import random
import re

from starlette.types import Scope

HEADER = b"x-request-id"
# Caller-supplied ids reach logs and other services: accept only short, printable, unambiguous ones.
_WELL_FORMED = re.compile(rb"[A-Za-z0-9._:@/+=-]{1,128}")
# 128 random bits from a generator seeded by the OS: an id needs to be unique, not secret, and
# secrets.token_hex costs a getrandom syscall per request (3 % of a by-id request, py-spy).
_random = random.Random()  # noqa: S311 - correlation ids, not security tokens


def _incoming_id(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == HEADER:
            return value.decode("ascii") if _WELL_FORMED.fullmatch(value) else None
    return None


def request_id(scope: Scope) -> str:
    """The caller's id when it is well formed, else a new one."""
    return _incoming_id(scope) or f"{_random.getrandbits(128):032x}"
