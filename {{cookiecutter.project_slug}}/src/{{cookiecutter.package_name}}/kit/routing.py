"""FastRoute: a FastAPI route that runs its own declaration with less per-request machinery.

Set once per router (`APIRouter(route_class=FastRoute)`, as `resource_router()` does); each route
is still declared the FastAPI way, and that one declaration gives the OpenAPI document, the
validation, the dependencies and the execution. What FastAPI's general handler does on every
request and these routes do not need is skipped: parsing cookies and the query string of a route
that declares none, building a spare Response for headers set by dependencies, walking an empty
dependency list. Every parameter is still validated by FastAPI's own functions against the
declared fields, and every dependency (of the app, an included router, the router or the route:
auth first of all) is still solved by FastAPI's own `solve_dependencies`, with overrides, caching
and `yield`.

The fast handler runs only where it is known to see the whole declaration: a route FastAPI
mounted through include_router, built while FastAPI's inclusion context names it (that context's
dependant carries the dependencies of every router on the way). Anything else runs FastAPI's
standard handler, decided when the route is built and logged once: a route used without
include_router, a declaration this handler does not implement (cookies, forms, a sync or
streaming endpoint, an endpoint not returning a Response, ...), or a FastAPI whose internals
(fastapi_internals.py) are missing or reshaped.
"""

import dataclasses
import inspect
import json
from enum import Enum
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import structlog
from fastapi import FastAPI, params
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, APIRouter
from pydantic_core import PydanticUndefined
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from . import fastapi_internals as internals
from .media_types import is_json
from .param_reader import ParamReader

logger = structlog.get_logger(__name__)

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@dataclass(frozen=True, slots=True)
class HandlerChoice:
    """Which handler a mounted route runs, and why (for the log and the contract test)."""

    methods: tuple[str, ...]
    path: str
    fast: bool
    reason: str | None  # why not fast, or None
    planned_readers: bool  # every parameter reader planned (param_reader.py), when fast


_logged: set[str] = set()
# Why the handler FastAPI builds when a route is declared is the standard one.
_DECLARED = "not built for an include_router mount"


def _log_once(event: str, **fields: Any) -> None:
    key = f"{event}:{sorted(fields.items())}"
    if key not in _logged:
        _logged.add(key)
        logger.warning(event, **fields)


def _as_included(route: APIRoute) -> Any | None:
    """The route as FastAPI mounted it, while FastAPI builds that mount's handler; else None.

    FastAPI builds an included route's handler by calling `get_route_handler()` of the declared
    route with its inclusion context set; only that context's dependant carries the dependencies
    given to `include_router` and to the app.
    """
    context = internals.EFFECTIVE_ROUTE_CONTEXT.get().get()
    if context is not None and getattr(context, "original_route", None) is route:
        return context
    return None


def _unsupported(route: Any) -> str | None:
    """Why this handler cannot run the route as declared, or None when it can."""
    missing = internals.route_attribute_problem(route)
    if missing is not None:
        return missing
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


async def _read_body(request: Request, strict_content_type: bool) -> Any:
    """The body as FastAPI hands it to validation: decoded JSON when the type says JSON (or,
    when not strict, says nothing), else the raw bytes; PydanticUndefined when empty."""
    raw = await request.body()
    if not raw:
        return PydanticUndefined
    content_type = request.headers.get("content-type")
    if content_type is None and strict_content_type:
        return raw
    if content_type is not None and not is_json(content_type):
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


def _fast_handler(route: Any, standard: Handler) -> tuple[Handler, bool]:
    """The handler, and whether every parameter reader is planned."""
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
    solve_dependencies = internals.SOLVE_DEPENDENCIES.get()
    request_body_to_args = internals.REQUEST_BODY_TO_ARGS.get()
    body_fields = dependant.body_params
    request_name = dependant.request_param_name
    strict = route.strict_content_type
    strict_content_type = bool(strict.value if isinstance(strict, DefaultPlaceholder) else strict)
    overrides = route.dependency_overrides_provider
    path = route.path
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
        exit_stack = request.scope.get(internals.INNER_EXIT_STACK_KEY)
        if exit_stack is None:
            # FastAPI's request wrapper no longer provides it: its own handler knows what to do.
            _log_once(
                "route_runs_standard_handler",
                path=path,
                reason=f"no {internals.INNER_EXIT_STACK_KEY} in the request scope",
            )
            return await standard(request)
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
                async_exit_stack=exit_stack,
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
            raise TypeError(f"{path} returned {type(response).__name__}, not a Response")
        if background is not None and response.background is None:
            response.background = background
        return response

    return handler, all(reader.planned for reader, _ in readers)


class FastRoute(APIRoute):
    """An APIRoute whose handler skips what its declaration does not need (see the module doc)."""

    # Every handler built for this route (one per inclusion), in build order.
    choices: list[HandlerChoice]

    def get_route_handler(self) -> Handler:
        # FastAPI's own handler for this build: the fast one falls back to it, and it is what
        # runs whenever the fast one cannot be trusted to see the whole declaration.
        standard = super().get_route_handler()
        reason, route = self._fast_path_blocker()
        if not hasattr(self, "choices"):
            self.choices = []
        methods = tuple(sorted(self.methods or ()))
        if reason is not None:
            path = getattr(route, "path", self.path)
            self.choices.append(HandlerChoice(methods, path, False, reason, False))
            if route is not None:  # a declaration the fast handler does not implement
                _log_once("route_runs_standard_handler", path=path, reason=reason)
            return standard
        handler, planned = _fast_handler(route, standard)
        self.choices.append(HandlerChoice(methods, route.path, True, None, planned))
        return handler

    def _fast_path_blocker(self) -> tuple[str | None, Any]:
        """(why the fast handler may not run, the mounted route when known)."""
        problems = internals.route_handler_problems()
        if problems:
            _log_once("route_runs_standard_handler", reason="; ".join(problems))
            return "; ".join(problems), None
        route = _as_included(self)
        if route is None:
            # Declared, not (yet) mounted: FastAPI builds this handler when the route is made,
            # and again for each include_router; only those builds see the whole declaration.
            return _DECLARED, None
        return _unsupported(route), route


def build_route_handlers(app: FastAPI) -> list[HandlerChoice]:
    """Build every mounted route's handler now, at start-up; return the choices made.

    FastAPI builds the handler of a route in an included router when the route is first matched;
    built here, every route's choice of handler is made, and logged, before any traffic.
    """
    problem = internals.ITER_ROUTE_CONTEXTS.problem()
    if problem is not None:
        _log_once("route_handlers_built_on_first_request", reason=problem)
        return []
    routes: dict[int, FastRoute] = {}
    for context in internals.ITER_ROUTE_CONTEXTS.get()(app.router.routes):
        if isinstance(context.original_route, FastRoute):
            routes[id(context.original_route)] = context.original_route
    return [
        choice
        for route in routes.values()
        for choice in getattr(route, "choices", [])
        if choice.reason != _DECLARED
    ]


def resource_router(prefix: str = "", *, tags: list[str | Enum] | None = None) -> APIRouter:
    """The router of one resource: every route it declares runs as a FastRoute."""
    return APIRouter(prefix=prefix, tags=tags, route_class=FastRoute)
