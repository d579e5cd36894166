"""The fast JSON response: bytes encoded once by orjson (or by PostgreSQL) and written as they are."""

from typing import Any

import orjson
from starlette.responses import Response


class JSONBytesResponse(Response):
    """application/json from pre-encoded bytes, or from any orjson-encodable value."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        if isinstance(content, bytes):
            return content
        return orjson.dumps(content)


class ProblemResponse(JSONBytesResponse):
    """RFC 9457 problem details."""

    media_type = "application/problem+json"
