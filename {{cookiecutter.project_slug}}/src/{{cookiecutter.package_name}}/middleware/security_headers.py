"""Security headers for a JSON API, added by a pure ASGI middleware (no BaseHTTPMiddleware).

The set follows the OWASP REST Security Cheat Sheet: a JSON API never needs to be framed, sniffed,
cached by shared caches or allowed to load anything. The interactive docs pages load Swagger UI
and ReDoc from a CDN, so they get every header but the Content-Security-Policy.
"""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_COMMON: tuple[tuple[bytes, bytes], ...] = (
    # Answers are per client and change with every write: no cache, shared or private, keeps them.
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"interest-cohort=()"),
)
_API_ONLY: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
)
# Browsers honour HSTS only over HTTPS; sent when the (trusted) proxy says the request was HTTPS.
_HSTS = (b"strict-transport-security", b"max-age=63072000; includeSubDomains")
_DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})


class SecurityHeadersMiddleware:
    """Append the security headers to every HTTP response; other scopes pass straight through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._api = list(_COMMON + _API_ONLY)
        self._docs = list(_COMMON)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = self._docs if scope["path"] in _DOCS_PATHS else self._api
        if scope.get("scheme") == "https":
            extra = [*extra, _HSTS]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Headers are a list of (bytes, bytes); extending it copies nothing per header.
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)
