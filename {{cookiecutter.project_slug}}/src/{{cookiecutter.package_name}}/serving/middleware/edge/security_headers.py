"""Security headers for a JSON API, added to every response by the edge middleware
(edge/__init__.py).

The set follows the OWASP REST Security Cheat Sheet: a JSON API never needs to be framed, sniffed,
cached by shared caches or allowed to load anything. The interactive docs pages load Swagger UI
and ReDoc from a CDN, so they get every header but the Content-Security-Policy.
"""

from starlette.types import Scope

_COMMON: tuple[tuple[bytes, bytes], ...] = (
    # Answers are per client and change with every write: no cache, shared or private, keeps them.
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
    # No Permissions-Policy: its one value here, interest-cohort=(), turned off FLoC, which no
    # browser ships; each header costs uvicorn's send a turn of its loop on every response.
)
_API_ONLY: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
)
# Browsers honour HSTS only over HTTPS; sent when the (trusted) proxy says the request was HTTPS.
_HSTS = (b"strict-transport-security", b"max-age=63072000; includeSubDomains")
_DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})


_API = [*_COMMON, *_API_ONLY]
# Every header this module may add: uvicorn's per-response check is made once for these (server.py).
EVERY_HEADER = (*_COMMON, *_API_ONLY, _HSTS)
_DOCS = list(_COMMON)


def security_headers(scope: Scope) -> list[tuple[bytes, bytes]]:
    """The headers every response to this request gets (a list shared between requests)."""
    extra = _DOCS if scope["path"] in _DOCS_PATHS else _API
    return [*extra, _HSTS] if scope.get("scheme") == "https" else extra
