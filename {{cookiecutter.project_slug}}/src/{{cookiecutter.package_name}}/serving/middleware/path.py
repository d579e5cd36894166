"""One URL per resource: a path that spells a slash as %2F names no resource (404).

The server decodes the path before routing, so `/items%2F1` would reach the route of `/items/1`:
a second spelling of the row, which a proxy rule on `/items/*` does not see. The raw path,
as the client sent it, is checked once, and only when it holds a `%`.
"""

from starlette.types import ASGIApp, Receive, Scope, Send

from ...kit.problems import problem

_ENCODED_SLASH = b"%2f"


def _encoded_slash(scope: Scope) -> bool:
    raw = scope.get("raw_path")
    return raw is not None and b"%" in raw and _ENCODED_SLASH in raw.lower()


class EncodedSlashMiddleware:
    """404 problem+json for a path with an encoded slash (%2F or %2f), before routing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _encoded_slash(scope):
            response = problem(
                404, "Not Found: a path names a resource with plain slashes, never %2F."
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
