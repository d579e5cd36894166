"""A kept request span's name, attributes and status, as OpenTelemetry's ASGI middleware gives
them.

`span_name`, `request_attributes` and `set_response_status` do what the middleware's
`get_default_span_details`, `collect_request_attributes` and `set_status_code` do in their
default mode (tests/observability/test_http_attributes.py holds them equal on a corpus of
requests and answers): one pass over the headers instead of three that decode every header
(the attributes of a four-header GET: 159 -> 14 thousand instructions, callgrind), the library's
own helpers where a value needs more than copying (a URL with credentials or a query to redact,
a method outside the standard ones, a user agent to classify).
"""

from contextlib import suppress
from typing import Any
from urllib.parse import unquote

from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.http import detect_synthetic_user_agent, redact_url, sanitize_method
from starlette.types import Scope

# sanitize_method's own list: these stand for themselves (others may be kept by a variable).
_STANDARD_METHODS = frozenset(
    ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY")
)

_UNSET = Status(StatusCode.UNSET)
_ERROR = Status(StatusCode.ERROR)


def _decoded(value: bytes) -> str:
    # As the middleware decodes a header (its _decode_header_item), except for the values it
    # raises on (not UTF-8, with a backslash escape cut short): their bytes, as latin-1 text.
    try:
        return value.decode("utf-8")
    except ValueError:
        pass
    try:
        return value.decode("unicode_escape")
    except ValueError:
        return value.decode("latin-1")


def _with_port(host: str, port: Any) -> str:
    return host + (":" + str(port) if str(port) != "80" else "")


def request_attributes(scope: Scope) -> dict[str, Any]:
    """The request span's attributes: http.scheme, .host, .flavor, .target, .url, .method,
    .server_name, .user_agent, net.host.port, net.peer.ip, net.peer.port (those present)."""
    hosts: list[str] = []
    user_agent: str | None = None
    for name, value in scope.get("headers") or ():
        name = name.lower()
        if name == b"host":
            hosts.append(_decoded(value))
        elif name == b"user-agent" and user_agent is None:
            user_agent = _decoded(value)
    server = scope.get("server") or ["0.0.0.0", 80]  # noqa: S104 - the middleware's stand-in
    port = server[1]
    url_host = hosts[0] if hosts else _with_port(server[0], port)
    path = scope.get("path", "")
    url = scope.get("scheme", "http") + "://" + url_host + path
    query = scope.get("query_string")
    if query:
        url += "?" + unquote(query.decode("utf8") if isinstance(query, bytes) else query)
    result: dict[str, Any] = {}
    if scheme := scope.get("scheme"):
        result["http.scheme"] = scheme
    if server_host := _with_port(server[0], port):
        result["http.host"] = server_host
    if port:
        with suppress(ValueError, TypeError):
            result["net.host.port"] = int(port)
    if flavor := scope.get("http_version"):
        result["http.flavor"] = flavor
    if path:
        result["http.target"] = path
    # Nothing for redact_url to take out: no credentials in the authority, no query.
    result["http.url"] = url if "@" not in url_host and "?" not in url else redact_url(url)
    if method := scope.get("method", ""):
        normalized = (method if method in _STANDARD_METHODS else sanitize_method(method)).strip()
        if normalized:
            result["http.method"] = normalized
    if hosts:
        result["http.server_name"] = ",".join(hosts)
    if user_agent:
        result["http.user_agent"] = user_agent
        if synthetic := detect_synthetic_user_agent(user_agent):
            result["user_agent.synthetic.type"] = synthetic
    if (client := scope.get("client")) is not None:
        if client[0]:
            result["net.peer.ip"] = client[0]
        if client[1]:
            with suppress(ValueError, TypeError):
                result["net.peer.port"] = int(client[1])
    return result


def span_name(scope: Scope) -> str:
    """The method and the path (the method alone without a path; HTTP for an unknown one)."""
    path: str = scope.get("path", "").strip()
    method: str = scope.get("method", "").strip()
    if method not in _STANDARD_METHODS:
        method = sanitize_method(method)
        if method == "_OTHER":
            method = "HTTP"
    if method and path:
        return f"{method} {path}"
    return path or method


def set_response_status(span: Span, status: int) -> None:
    """http.status_code, and the span's status: an error for a status below 100 or a 5xx."""
    span.set_attribute("http.status_code", status)
    span.set_status(_ERROR if status < 100 or status > 499 else _UNSET)
