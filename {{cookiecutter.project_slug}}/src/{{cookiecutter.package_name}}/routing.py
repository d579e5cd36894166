"""FastRoute: a FastAPI route that runs its own declaration with less per-request machinery.

Set once per router (`APIRouter(route_class=FastRoute)`); each route is still declared the
FastAPI way, and that one declaration gives the OpenAPI document, the validation, the
dependencies and the execution. What FastAPI's general handler does on every request and these
routes do not need is skipped: parsing cookies and the query string of a route that declares
none, building a spare Response for headers set by dependencies, walking an empty dependency
list. Every parameter is still validated by FastAPI's own functions against the declared fields,
and every dependency (of the app, an included router, the router or the route: auth first of
all) is still solved by FastAPI's own `solve_dependencies`, with overrides, caching and `yield`.

A route declaring something this handler does not implement (cookies, forms, a sync or
streaming endpoint, an endpoint not returning a Response, ...) runs FastAPI's standard handler:
decided when the route is built, logged once, never silently skipped.
"""

import dataclasses
import email.message
import inspect
import json
from collections.abc import Callable, Coroutine
from typing import Any

import structlog
from fastapi import FastAPI, params
from fastapi import routing as fastapi_routing
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_body_to_args, solve_dependencies
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic_core import PydanticUndefined
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .routing_params import ParamReader

logger = structlog.get_logger(__name__)

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _as_included(route: APIRoute) -> Any:
    """The route as FastAPI mounted it: its dependant then carries the dependencies of the app and
    of every router it was included through, not only its own.

    FastAPI builds a mounted route's handler by calling `get_route_handler()` of the declared
    route with the mount's context set; without that context (or on a FastAPI that no longer
    sets it) this returns the route itself, whose dependant is then the whole truth.
    """
    context_var = getattr(fastapi_routing, "_effective_route_context_var", None)
    context = context_var.get() if context_var is not None else None
    if context is not None and getattr(context, "original_route", None) is route:
        return context
    return route


def _unsupported(route: Any) -> str | None:
    """Why this handler cannot run the route as declared, or None when it can."""
    dependant: Dependant = route.dependant
    call = dependant.call
    if call is None or not inspect.iscoroutinefunction(call):
        return "the endpoint is not an async def function"
    returns = inspect.signature(call).return_annotation
    if not (inspect.isclass(returns) and issubclass(returns, Response)):
        return "the endpoint is not annotated to return a Response"
    if dependant.cookie_params:
        return "it declares cookie parameters"
    for name in ("websocket", "http_connection", "response", "background_tasks", "security_scopes"):
        if getattr(dependant, f"{name}_param_name") is not None:
            return f"the endpoint takes a {name} parameter"
    body_field = route.body_field
    if body_field is not None and isinstance(body_field.field_info, params.Form):
        return "it reads a form body"
    if len(dependant.body_params) > 1 or route._embed_body_fields:
        return "it declares an embedded or multi-part body"
    return None


def _is_json(content_type: str) -> bool:
    # The rule FastAPI's standard handler applies, through the same parser.
    message = email.message.Message()
    message["content-type"] = content_type
    if message.get_content_maintype() != "application":
        return False
    subtype = message.get_content_subtype()
    return subtype == "json" or subtype.endswith("+json")


async def _read_body(request: Request, strict_content_type: bool) -> Any:
    """The body as FastAPI hands it to validation: decoded JSON when the type says JSON (or,
    when not strict, says nothing), else the raw bytes; PydanticUndefined when empty."""
    raw = await request.body()
    if not raw:
        return PydanticUndefined
    content_type = request.headers.get("content-type")
    if content_type is None and strict_content_type:
        return raw
    if content_type is not None and not _is_json(content_type):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as error:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", error.pos),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": error.msg},
                }
            ],
            body=error.doc,
        ) from error
    except Exception as error:  # not UTF-8, nested too deeply: FastAPI's 400, same cause
        raise HTTPException(400, "There was an error parsing the body") from error


def _fast_handler(route: Any) -> Handler:
    dependant: Dependant = route.dependant
    call = dependant.call
    assert call is not None
    # Each declared kind of parameter, with the request attribute it is read from.
    readers = [
        (ParamReader(fields), source)
        for fields, source in (
            (dependant.path_params, "path_params"),
            (dependant.query_params, "query_params"),
            (dependant.header_params, "headers"),
        )
        if fields
    ]
    body_fields = dependant.body_params
    request_name = dependant.request_param_name
    strict = route.strict_content_type
    strict_content_type = bool(strict.value if isinstance(strict, DefaultPlaceholder) else strict)
    overrides = route.dependency_overrides_provider
    # Only the dependencies go through solve_dependencies; the route's own parameters are
    # validated below, from the declared fields, without the general bookkeeping.
    dependencies = (
        dataclasses.replace(
            dependant,
            path_params=[],
            query_params=[],
            header_params=[],
            cookie_params=[],
            body_params=[],
        )
        if dependant.dependencies
        else None
    )

    async def handler(request: Request) -> Response:
        body = await _read_body(request, strict_content_type) if body_fields else PydanticUndefined
        values: dict[str, Any] = {}
        errors: list[Any] = []
        background = None
        if dependencies is not None:
            solved = await solve_dependencies(
                request=request,
                dependant=dependencies,
                body=body,
                dependency_overrides_provider=overrides,
                async_exit_stack=request.scope["fastapi_inner_astack"],
                embed_body_fields=False,
            )
            values.update(solved.values)
            errors.extend(solved.errors)
            background = solved.background_tasks
        for reader, source in readers:
            found, failed = reader.read(getattr(request, source))
            values.update(found)
            errors.extend(failed)
        if body_fields:
            found, failed = await request_body_to_args(
                body_fields=body_fields,
                received_body=body,
                embed_body_fields=False,
            )
            values.update(found)
            errors.extend(failed)
        if errors:
            raise RequestValidationError(errors, body=body)
        if request_name is not None:
            values[request_name] = request
        response = await call(**values)
        if not isinstance(response, Response):
            raise TypeError(f"{route.path} returned {type(response).__name__}, not a Response")
        if background is not None and response.background is None:
            response.background = background
        return response

    return handler


class FastRoute(APIRoute):
    """An APIRoute whose handler skips what its declaration does not need (see the module doc)."""

    def get_route_handler(self) -> Handler:
        route = _as_included(self)
        reason = _unsupported(route)
        if reason is not None:
            logger.warning("route_runs_standard_handler", path=route.path, reason=reason)
            return super().get_route_handler()
        return _fast_handler(route)


def build_route_handlers(app: FastAPI) -> None:
    """Build every mounted route's handler now, at start-up.

    FastAPI builds the handler of a route in an included router when the route is first matched;
    built here, every route's choice of handler is made, and logged, before any traffic.
    """
    for _ in iter_route_contexts(app.router.routes):
        pass
