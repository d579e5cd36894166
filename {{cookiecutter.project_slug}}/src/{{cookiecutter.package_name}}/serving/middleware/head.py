"""HEAD is GET without the body (RFC 9110 9.3.2), for every GET route.

FastAPI routes answer only the methods they declare, and declaring HEAD beside GET would put a
second operation in the OpenAPI document. The app sees a GET instead; the server, which still
holds the original HEAD scope, sends the status and headers (Content-Length, ETag) of that answer
and drops its body.
"""

from starlette.types import ASGIApp, Receive, Scope, Send


class HeadAsGetMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
        await self.app(scope, receive, send)
