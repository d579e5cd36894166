"""Answers about one row: its JSON (built by PostgreSQL), its ETag, and why a write was refused.

A resource's statements return a record of (version, body[, id]): body is the row as JSON text,
built by PostgreSQL and passed through as bytes (no record decoding, no encoder in Python).
"""

from collections.abc import Awaitable

from ..db import Record
from .conditional import etag, stale
from .problems import ProblemError
from .responses import JSONBytesResponse


def row_etag(record: Record) -> str:
    return etag(record["version"])


def row_response(
    record: Record, *, status_code: int = 200, location: str | None = None
) -> JSONBytesResponse:
    """The row's JSON with its ETag (and Location, for a create)."""
    headers = {"ETag": row_etag(record)}
    if location is not None:
        headers["Location"] = location
    body: str = record["body"]
    return JSONBytesResponse(body.encode(), status_code=status_code, headers=headers)


def not_found(noun: str, row_id: int) -> ProblemError:
    return ProblemError(404, f"{noun} {row_id} does not exist.")


async def refusal(current_version: Awaitable[int | None], missing: ProblemError) -> ProblemError:
    """Why a conditional write changed nothing: `missing` (404) when the row is gone, else the
    412 naming its current version. Read after the write, so it names the newest version."""
    version = await current_version
    return missing if version is None else stale(version)
