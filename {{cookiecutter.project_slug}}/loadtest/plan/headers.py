"""The headers every request of the load test carries, credentials included: given once, sent by
every client (the engine, k6, wrk), never printed and never written to a file.

They come from LOADTEST_HEADERS (one `Name: value` per line) and from `--header 'Name: value'`
(repeatable; a command line is visible to `ps`, so a secret belongs in LOADTEST_HEADERS). k6 and
wrk read them from LOADTEST_HEADERS in their own environment: the k6 config in loadtest/results,
wrk's command line and its Lua hold no value. What the service the load test starts accepts:
loadtest/drive/credentials.py.
"""

import os
import re
from collections.abc import Iterable, Mapping

ENVIRONMENT = "LOADTEST_HEADERS"
_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header name is a token (RFC 9110)


class HeadersError(ValueError):
    """Headers that cannot be sent or checked; the message never holds a header's value."""


def parse(lines: Iterable[str]) -> dict[str, str]:
    """`Name: value` lines as headers; a name given twice (in any case) keeps its last value."""
    headers: dict[str, str] = {}
    for line in filter(str.strip, lines):
        name, colon, value = (part.strip() for part in line.partition(":"))
        # The engine writes these into raw request bytes: no line break may smuggle in a header.
        if not colon or not _NAME.fullmatch(name) or not value or set(value) & set("\r\n\0"):
            raise HeadersError(
                f"each header of {ENVIRONMENT} and --header must be `Name: value` on one line "
                "(the line is not shown: it may hold a secret)"
            )
        headers = {key: item for key, item in headers.items() if key.lower() != name.lower()}
        headers[name] = value
    return headers


def given(options: Iterable[str] | None = None) -> dict[str, str]:
    """The headers of LOADTEST_HEADERS, then of each --header (the last one of a name wins)."""
    return parse([*os.environ.get(ENVIRONMENT, "").splitlines(), *(options or [])])


def value_of(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header `name`, in any case; None when it is absent."""
    return next((value for key, value in headers.items() if key.lower() == name.lower()), None)


def environment(headers: Mapping[str, str]) -> dict[str, str]:
    """This process's environment with `headers` in LOADTEST_HEADERS, for a k6 or wrk it runs."""
    lines = "".join(f"{name}: {value}\n" for name, value in headers.items())
    return {**os.environ, ENVIRONMENT: lines}
