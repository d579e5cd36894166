"""HEAD is GET without the body (RFC 9110 9.3.2), for every GET route.

FastAPI routes answer only the methods they declare, and declaring HEAD beside GET would put a
second operation in the OpenAPI document. The app sees a GET instead, in a copy of the scope; the
server, which still holds the original HEAD scope, sends the status and headers (Content-Length,
ETag) of that answer and drops its body. The route the router matched is copied back, so that the
metrics and the access log name its template for HEAD as for GET.
"""

from starlette.types import ASGIApp, Receive, Scope, Send


class HeadAsGetMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        as_get = {**scope, "method": "GET"}
        try:
            await self.app(as_get, receive, send)
        finally:
            if "route" in as_get:
                scope["route"] = as_get["route"]
