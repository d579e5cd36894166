"""The fast lane for the hot routes: GET /{{ cookiecutter.resource_plural }}/{id}, GET /{{ cookiecutter.resource_plural }}?limit=&after= and POST /{{ cookiecutter.resource_plural }}.

A plain, valid request is answered straight from the pool with the JSON PostgreSQL built, skipping
what FastAPI does per request (exception and exit-stack middleware, three routers, the Request
object, dependency solving, parameter validation). A create body is validated by the same
pydantic model, straight from the JSON bytes. Anything else (a malformed or zero id, an unknown
or repeated query parameter, a missing row, a body the model rejects) goes on to the FastAPI route, which stays the
documented contract and answers every error; database errors get the app's own handlers. Our
middleware still wraps both lanes, so logs, metrics and headers are the same.
"""

import re
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..db import Database
from . import repository
from .routes import PREFIX, router
from .schemas import INT64_MAX, {{ cookiecutter.__resource_class }}Create

_ID = re.compile(r"[1-9][0-9]{0,18}")
_PAGING = re.compile(rb"(?:(limit|after)=([0-9]{1,19}))(?:&(limit|after)=([0-9]{1,19}))?")
_JSON = (b"content-type", b"application/json")
_CONTENT_TYPE = b"content-type"


def _paging(query: bytes) -> tuple[int, int] | None:
    """(after, limit) of a query string the fast lane can serve, else None."""
    if not query:
        return 0, 20
    match = _PAGING.fullmatch(query)
    if match is None or match.group(1) == match.group(3):
        return None
    values = {b"after": 0, b"limit": 20}
    for name, value in ((match.group(1), match.group(2)), (match.group(3), match.group(4))):
        if name is not None:
            values[name] = int(value)
    after, limit = values[b"after"], values[b"limit"]
    return (after, limit) if 1 <= limit <= 500 and after <= INT64_MAX else None


class FastReadsMiddleware:
    """Innermost middleware: serve the hot reads, pass everything else to the FastAPI app."""

    def __init__(self, app: ASGIApp, *, fastapi: FastAPI) -> None:
        self.app = app
        self._fastapi = fastapi
        routes = {route.path: route for route in router.routes if isinstance(route, APIRoute)}
        # Metrics and the access log label requests by scope["route"]: the same routes as FastAPI's.
        self._one_route = routes[PREFIX + "/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}"]
        self._page_route = routes[PREFIX]
        self._create_route = next(
            route for route in router.routes
            if isinstance(route, APIRoute) and route.path == PREFIX and "POST" in (route.methods or ())
        )  # fmt: skip
        self._one_prefix = PREFIX + "/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == PREFIX:
            if _declares_json(scope):
                await self._create(scope, receive, send)
                return
        elif scope["type"] == "http" and scope["method"] == "GET":
            path: str = scope["path"]
            if path.startswith(self._one_prefix) and not scope["query_string"]:
                raw_id = path[len(self._one_prefix) :]
                if _ID.fullmatch(raw_id) and int(raw_id) <= INT64_MAX:
                    scope["route"] = self._one_route
                    if await self._serve_one(int(raw_id), scope, send):
                        return
            elif path == PREFIX:
                paging = _paging(scope["query_string"])
                if paging is not None:
                    scope["route"] = self._page_route
                    await self._serve_page(*paging, scope, send)
                    return
        await self.app(scope, receive, send)

    async def _serve_one(self, {{ cookiecutter.resource }}_id: int, scope: Scope, send: Send) -> bool:
        database: Database = self._fastapi.state.db
        try:
            async with database.connection() as connection:
                record = await repository.get_{{ cookiecutter.resource }}(connection, {{ cookiecutter.resource }}_id={{ cookiecutter.resource }}_id)
        except Exception as error:
            await self._answer_error(error, scope, send)
            return True
        if record is None:
            return False  # the route answers the 404, one place for its wording
        etag = f'"{record["version"]}"'.encode()
        await _send_json(send, record["body"].encode(), (b"etag", etag))
        return True

    async def _serve_page(self, after: int, limit: int, scope: Scope, send: Send) -> None:
        database: Database = self._fastapi.state.db
        try:
            async with database.connection() as connection:
                page = await repository.list_{{ cookiecutter.resource_plural }}(connection, after=after, limit=limit)
        except Exception as error:
            await self._answer_error(error, scope, send)
            return
        await _send_json(send, page.encode())

    async def _create(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        if body is None:
            return  # the client went away
        try:
            new = {{ cookiecutter.__resource_class }}Create.model_validate_json(body)
        except ValidationError:
            # The route parses the same bytes again and answers with its own 4xx.
            await self.app(scope, _replay(body, receive), send)
            return
        scope["route"] = self._create_route
        database: Database = self._fastapi.state.db
        try:
            async with database.connection() as connection:
                record = await repository.create_{{ cookiecutter.resource }}(connection, new=new)
        except Exception as error:
            await self._answer_error(error, scope, send)
            return
        location = (b"location", f"{PREFIX}/{record['id']}".encode())
        etag = (b"etag", f'"{record["version"]}"'.encode())
        await _send_json(send, record["body"].encode(), location, etag, status=201)

    async def _answer_error(self, error: Exception, scope: Scope, send: Send) -> None:
        """Answer with the app's own exception handler for this error, as the route would."""
        handlers: dict[Any, Any] = self._fastapi.exception_handlers
        handler = next((handlers[kind] for kind in type(error).__mro__ if kind in handlers), None)
        if handler is None:
            raise error
        response = await handler(Request(scope), error)
        await response(scope, _replay(b"", _never), send)


async def _never() -> Message:
    raise RuntimeError("an error response does not read the request body")


def _declares_json(scope: Scope) -> bool:
    return any(
        name == _CONTENT_TYPE and value == b"application/json" for name, value in scope["headers"]
    )


async def _read_body(receive: Receive) -> bytes | None:
    # The body limit middleware outside this one has already refused an oversize body.
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the already-read body to the app once, then defers to the server."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _send_json(
    send: Send, body: bytes, *extra: tuple[bytes, bytes], status: int = 200
) -> None:
    headers = [_JSON, (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
