"""Every private or undocumented uvicorn name the server uses, in one place, checked once.

The request-head limits (protocol.py) subclass uvicorn's httptools protocol and read its state;
the metrics listener starts a second uvicorn server without `serve()`; the overload answer swaps a
module global. A uvicorn release may change any of these; the version range in pyproject.toml
stops below the next release line, and the bake's tests/serving/test_uvicorn_contract.py holds
each to the shape used here. At start-up a missing piece never means a weaker server: without the
protocol's pieces there is no server that keeps the head limits, so the service refuses to start
with one line naming the piece; without the overload global, uvicorn answers its own plain-text
503 and one log line says so.
"""

import inspect
import re
from collections.abc import Iterable
from typing import Any

import uvicorn
from uvicorn.protocols.http import httptools_impl

# HttpToolsProtocol methods protocol.py overrides or calls, and the attributes it reads.
PROTOCOL_METHODS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "send_400_response",
    "on_response_complete",
)
PROTOCOL_ATTRIBUTES = (
    "url",
    "headers",
    "cycle",
    "transport",
    "loop",
    "client",
    "server_state",
    "timeout_keep_alive_task",
    "parser",
    "pipeline",
    "connections",
)
# RequestResponseCycle attributes the body deadline sets to tell the app its client is gone.
CYCLE_ATTRIBUTES = ("disconnected", "message_event", "response_started", "response_complete")
# The module global uvicorn answers excess connections with (--limit-concurrency).
OVERLOAD_APP = "service_unavailable"


def _instance_attributes(cls: type, names: tuple[str, ...] = PROTOCOL_ATTRIBUTES) -> set[str]:
    """Attributes the class sets on its instances (read from its source: uvicorn declares them
    in __init__ and the callbacks, not on the class)."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return set()
    return {name for name in names if f"self.{name}" in source}


def protocol_problems() -> list[str]:
    """What protocol.py needs of uvicorn's httptools protocol and does not find."""
    cls: Any = getattr(httptools_impl, "HttpToolsProtocol", None)
    if cls is None:
        return ["uvicorn.protocols.http.httptools_impl.HttpToolsProtocol is missing"]
    # Defined by uvicorn's class itself: asyncio.Protocol's empty ones do not count.
    problems = [
        f"HttpToolsProtocol.{name} is missing"
        for name in PROTOCOL_METHODS
        if not callable(vars(cls).get(name))
    ]
    if not callable(vars(cls).get("_unset_keepalive_if_required")):
        problems.append("HttpToolsProtocol._unset_keepalive_if_required is missing")
    found = _instance_attributes(cls)
    problems += [
        f"HttpToolsProtocol sets no {name}" for name in PROTOCOL_ATTRIBUTES if name not in found
    ]
    cycle: Any = getattr(httptools_impl, "RequestResponseCycle", None)
    found = _instance_attributes(cycle, CYCLE_ATTRIBUTES) if cycle is not None else set()
    problems += [
        f"RequestResponseCycle sets no {name}" for name in CYCLE_ATTRIBUTES if name not in found
    ]
    status_line = getattr(httptools_impl, "STATUS_LINE", None)
    if not isinstance(status_line, dict) or not {400, 408, 431} <= status_line.keys():
        problems.append("uvicorn.protocols.http.httptools_impl.STATUS_LINE lacks 400, 408 or 431")
    return problems


def listener_problems() -> list[str]:
    """What the metrics listener needs of uvicorn.Config and uvicorn.Server."""
    problems = []
    if not callable(getattr(uvicorn.Config, "load", None)):
        problems.append("uvicorn.Config.load is missing")
    if "lifespan_class" not in _config_attributes():
        problems.append("uvicorn.Config.load sets no lifespan_class")
    startup = getattr(uvicorn.Server, "startup", None)
    if startup is None or "sockets" not in inspect.signature(startup).parameters:
        problems.append("uvicorn.Server.startup takes no sockets")
    if not callable(getattr(uvicorn.Config, "get_loop_factory", None)):
        problems.append("uvicorn.Config.get_loop_factory is missing")
    return problems


def _config_attributes() -> str:
    try:
        return inspect.getsource(uvicorn.Config.load)
    except (OSError, TypeError, AttributeError):
        return ""


def overload_problem() -> str | None:
    if not callable(getattr(httptools_impl, OVERLOAD_APP, None)):
        return f"uvicorn.protocols.http.httptools_impl.{OVERLOAD_APP} is missing"
    return None


# uvicorn's httptools `send` checks every response header's name and value against these two
# module-level patterns, on every response (`HEADER_RE.search(name)`, `HEADER_VALUE_RE.search`).
HEADER_PATTERNS = ("HEADER_RE", "HEADER_VALUE_RE")


class CheckedOnce(dict[bytes, None]):
    """Stands in for one of uvicorn's header patterns: `search` answers from this dict, in C, for
    the names and values checked against uvicorn's own pattern once at start-up (None: nothing
    invalid found), and runs that pattern, as uvicorn does, on anything else (an ETag, a length,
    an id: the values that change)."""

    def __init__(self, pattern: "re.Pattern[bytes]", known: Iterable[bytes]) -> None:
        super().__init__((value, None) for value in known if pattern.search(value) is None)
        self.pattern = pattern
        self.search = self.__getitem__

    def __missing__(self, value: bytes) -> "re.Match[bytes] | None":
        return self.pattern.search(value)


def header_check_problem() -> str | None:
    """Why the header patterns cannot be stood in for, or None."""
    for name in HEADER_PATTERNS:
        pattern = getattr(httptools_impl, name, None)
        if not isinstance(pattern, (re.Pattern, CheckedOnce)):
            return f"uvicorn.protocols.http.httptools_impl.{name} is not a regular expression"
    try:
        source = inspect.getsource(httptools_impl.RequestResponseCycle.send)
    except (OSError, TypeError, AttributeError):
        return "uvicorn's RequestResponseCycle.send has no readable source"
    absent = [name for name in HEADER_PATTERNS if f"{name}.search(" not in source]
    if absent:
        return f"RequestResponseCycle.send no longer calls {', '.join(absent)}.search"
    return None


def check_headers_once(names: Iterable[bytes], values: Iterable[bytes]) -> str | None:
    """Let uvicorn's `send` skip its two regular expressions for these header names and values,
    checked here once against the same patterns; return why not when uvicorn has changed."""
    problem = header_check_problem()
    if problem is not None:
        return problem
    patterns = {name: getattr(httptools_impl, name) for name in HEADER_PATTERNS}
    originals = {
        name: pattern.pattern if isinstance(pattern, CheckedOnce) else pattern
        for name, pattern in patterns.items()
    }
    httptools_impl.HEADER_RE = CheckedOnce(originals["HEADER_RE"], names)  # type: ignore[assignment]
    httptools_impl.HEADER_VALUE_RE = CheckedOnce(originals["HEADER_VALUE_RE"], values)  # type: ignore[assignment]
    return None
