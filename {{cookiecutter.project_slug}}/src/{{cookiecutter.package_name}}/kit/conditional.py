"""Conditional requests (RFC 9110 section 13): If-Match on writes, If-None-Match on reads.

The service's ETag is the row version in quotes, `"3"`, always strong. The header syntax is
declared on the route parameters (`IF_MATCH_PATTERN`, `IF_NONE_MATCH_PATTERN`) so that the OpenAPI
document says exactly what is accepted and FastAPI refuses the rest; this module only decides what a
well-formed header means. Each is declared as a list of lines: a header repeated on several lines
is one comma-separated list (RFC 9110 5.3), read whole, as a proxy combining them would pass it.
"""

import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import Header
from pydantic import StringConstraints

from .numbers import INT64_MAX
from .problems import ProblemError

# entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE; etagc = %x21 / %x23-7E / obs-text (RFC 9110 8.8.3).
_ETAG = r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"'
# A list (RFC 9110 5.6.1) tolerates empty elements and optional whitespace around commas.
_ETAG_LIST = rf"[ \t]*(?:,[ \t]*)*{_ETAG}(?:[ \t]*,(?:[ \t]*{_ETAG})?)*[ \t]*"
IF_MATCH_PATTERN = rf"^(?:[ \t]*\*[ \t]*|{_ETAG_LIST})$"
IF_NONE_MATCH_PATTERN = IF_MATCH_PATTERN
# Plenty for any real list of tags; a header is not a place to send kilobytes.
MAX_HEADER_LENGTH = 1024

IfMatch = Annotated[
    list[Annotated[str, StringConstraints(pattern=IF_MATCH_PATTERN, max_length=MAX_HEADER_LENGTH)]]
    | None,
    Header(
        examples=[['"1"'], ['"1", "2"'], ["*"]],
        description='ETags of the versions this write may change, e.g. "3" or "3", "4"; or *. '
        "Strong comparison: a weak tag (W/) never matches. None current: 412.",
    ),
]
IfNoneMatch = Annotated[
    list[
        Annotated[
            str, StringConstraints(pattern=IF_NONE_MATCH_PATTERN, max_length=MAX_HEADER_LENGTH)
        ]
    ]
    | None,
    Header(
        examples=[['"1"'], ['W/"1", "2"'], ["*"]],
        description='ETags the client holds, e.g. "3"; 304 Not Modified when one is current.',
    ),
]

_ONE_ETAG = re.compile(r'(W/)?"([^"]*)"')
# Versions the service can have issued: canonical decimal, within bigint.
_VERSION = re.compile(r"[1-9][0-9]{0,18}")


@dataclass(frozen=True, slots=True)
class EntityTags:
    """A parsed If-Match / If-None-Match value: `*`, or the listed tags as (weak, opaque-tag)."""

    any: bool
    tags: tuple[tuple[bool, str], ...] = ()


def parse(lines: list[str]) -> EntityTags:
    """Parse the lines of one header, each already checked against IF_MATCH_PATTERN."""
    if any(line.strip(" \t") == "*" for line in lines):
        return EntityTags(any=True)
    return EntityTags(
        any=False,
        tags=tuple(
            (weak == "W/", opaque) for line in lines for weak, opaque in _ONE_ETAG.findall(line)
        ),
    )


def etag(version: int) -> str:
    return f'"{version}"'


def _version(opaque: str) -> int | None:
    if _VERSION.fullmatch(opaque) is None:
        return None
    version = int(opaque)
    return version if version <= INT64_MAX else None


def versions_matching(if_match: list[str] | None, *, required: bool) -> list[int] | None:
    """The versions a write may apply to: None for no condition (absent or `*`), else the list.

    Strong comparison (RFC 9110 13.1.1): a weak tag never matches. A well-formed tag that is not a
    version this service could have issued (`"abc"`, `"01"`, one above bigint) matches nothing, so
    a list of only such tags gives an empty list: the write is refused with 412 as stale. With
    `required` (REQUIRE_IF_MATCH), a write without If-Match is refused with 428.
    """
    if if_match is None:
        if required:
            raise ProblemError(
                428, 'This write needs If-Match: send the ETag of the version you read, e.g. "3".'
            )
        return None
    parsed = parse(if_match)
    if parsed.any:
        return None
    versions = (_version(opaque) for weak, opaque in parsed.tags if not weak)
    return sorted({version for version in versions if version is not None})


def stale(current: int) -> ProblemError:
    """The 412 for a write whose If-Match named no current version."""
    return ProblemError(
        412, f"If-Match names no current version: the current ETag is {etag(current)}."
    )


def none_match(if_none_match: list[str] | None, current: str) -> bool:
    """False when If-None-Match names the current ETag (or is `*`): the GET answers 304.

    Weak comparison (RFC 9110 13.1.2): W/"3" and "3" both name version 3.
    """
    if if_none_match is None:
        return True
    parsed = parse(if_none_match)
    if parsed.any:
        return False
    return all(f'"{opaque}"' != current for _, opaque in parsed.tags)
