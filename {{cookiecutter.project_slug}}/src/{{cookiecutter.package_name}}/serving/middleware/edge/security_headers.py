"""Security headers for a JSON API, added to every response by the edge middleware
(edge/__init__.py).

An API answer gets the OWASP REST Security Cheat Sheet's set: a JSON API never needs to be framed,
sniffed, cached or allowed to load anything (Content-Type is the answer's own). The interactive
docs pages are HTML that a browser renders and that load Swagger UI and ReDoc from a CDN: they get
every header but the Content-Security-Policy, plus the two that only a page needs. Each header
costs uvicorn's `send` a turn of its loop on every response, so an answer carries none that does
nothing for JSON.
"""

from starlette.types import Scope

_COMMON: tuple[tuple[bytes, bytes], ...] = (
    # Answers are per client and change with every write: no cache, shared or private, keeps them.
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
)
_API_ONLY: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
)
# A page's own requests: the CDN is not told the docs' URL, and the page is not embedded by other
# sites. JSON makes no requests, and browsers already refuse a cross-site read of JSON sent with
# nosniff (Opaque Response Blocking). No Permissions-Policy: its one value, interest-cohort=(),
# turned off FLoC, which no browser ships.
_DOCS_ONLY: tuple[tuple[bytes, bytes], ...] = (
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
# Browsers honour HSTS only over HTTPS; sent when the (trusted) proxy says the request was HTTPS.
_HSTS = (b"strict-transport-security", b"max-age=63072000; includeSubDomains")
_DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})


_API = [*_COMMON, *_API_ONLY]
# Every header this module may add: uvicorn's per-response check is made once for these (server.py).
EVERY_HEADER = (*_COMMON, *_API_ONLY, *_DOCS_ONLY, _HSTS)
_DOCS = [*_COMMON, *_DOCS_ONLY]


def security_headers(scope: Scope) -> list[tuple[bytes, bytes]]:
    """The headers every response to this request gets (a list shared between requests)."""
    extra = _DOCS if scope["path"] in _DOCS_PATHS else _API
    return [*extra, _HSTS] if scope.get("scheme") == "https" else extra
