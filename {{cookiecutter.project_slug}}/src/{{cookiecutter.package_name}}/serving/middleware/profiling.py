"""PROFILING=true (development only): `?profile=1` answers pyinstrument's HTML profile of the request.

The request runs through the whole stack below this layer as usual, without the `profile`
parameter (a list route refuses query parameters it does not declare); its answer is read and
dropped, and the profile of its run is sent instead, with the answer's status in
`X-Profiled-Status`. In the stack only when the setting is on, which the settings refuse in
production: anyone could otherwise run any request under the profiler and read the code's layout.
"""

from urllib.parse import parse_qsl, urlencode

from starlette.responses import HTMLResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PROFILE_PARAMETER = "profile"


def _without_profile(query_string: bytes) -> tuple[bytes, bool]:
    """The query string without `profile=1`, and whether it was there."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    kept = [(name, value) for name, value in pairs if (name, value) != (PROFILE_PARAMETER, "1")]
    return urlencode(kept).encode("latin-1"), len(kept) != len(pairs)


class ProfilingMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or b"profile=1" not in scope.get("query_string", b""):
            await self.app(scope, receive, send)
            return
        query_string, profiled = _without_profile(scope["query_string"])
        if not profiled:
            await self.app(scope, receive, send)
            return
        # Imported here: pyinstrument is a development dependency, absent from production images.
        from pyinstrument import Profiler

        status = 0

        async def keep_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        profiler = Profiler(async_mode="enabled")
        profiler.start()
        try:
            await self.app({**scope, "query_string": query_string}, receive, keep_status)
        finally:
            profiler.stop()
        report = HTMLResponse(profiler.output_html(), headers={"X-Profiled-Status": str(status)})
        await report(scope, receive, send)
