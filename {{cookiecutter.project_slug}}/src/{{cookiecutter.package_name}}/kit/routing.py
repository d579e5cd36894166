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
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from enum import Enum
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
    planned_dependencies: bool  # the plain dependencies called directly, when fast


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


def _is_plain(dependency: Dependant) -> bool:
    """A dependency FastRoute may call itself: an `async def` taking at most the request, with
    nothing of its own to solve, cache or close (what DatabaseDep and SettingsDep are)."""
    call = dependency.call
    return (
        call is not None
        and inspect.iscoroutinefunction(call)
        and dependency.name is not None
        and dependency.use_cache
        and not dependency.dependencies
        and not any(
            getattr(dependency, f"{kind}_params")
            for kind in ("path", "query", "header", "cookie", "body")
        )
        and not any(
            getattr(dependency, f"{name}_param_name") is not None
            for name in (
                "websocket",
                "http_connection",
                "response",
                "background_tasks",
                "security_scopes",
            )
        )
        and not dependency.own_oauth_scopes
        and getattr(dependency, "scope", None) is None
        and getattr(dependency, "concurrency", None) is None
    )


def _calls_in(dependencies: list[Dependant]) -> set[Any]:
    calls: set[Any] = set()
    for dependency in dependencies:
        calls.add(dependency.call)
        calls |= _calls_in(dependency.dependencies)
    return calls


def _split_dependencies(dependencies: list[Dependant]) -> tuple[list[Dependant], list[Dependant]]:
    """(what solve_dependencies solves, the plain dependencies called directly after it).

    Only a tail of plain dependencies is split off, so that every dependency still runs in
    declaration order, and only when no solved dependency depends on one of them (FastAPI would
    call it once for both). On anything else, solve_dependencies solves them all.
    """
    if internals.dependency_plan_problem() is not None:
        return dependencies, []
    split = len(dependencies)
    while split > 0 and _is_plain(dependencies[split - 1]):
        split -= 1
    solved, plain = dependencies[:split], dependencies[split:]
    if {dependency.call for dependency in plain} & _calls_in(solved):
        return dependencies, []
    return solved, plain


def _fast_handler(route: Any, standard: Handler) -> tuple[Handler, bool, bool]:
    """The handler; whether every parameter reader is planned; whether the plain dependencies
    are called directly."""
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
    only_dependencies = dataclasses.replace(
        dependant,
        path_params=[],
        query_params=[],
        header_params=[],
        cookie_params=[],
        body_params=[],
    )
    all_dependencies = only_dependencies if dependant.dependencies else None
    # solve_dependencies costs ~30 us for one dependency that only reads the lifespan state
    # (DatabaseDep): a tail of such plain ones is called directly, unless one is overridden.
    solved, plain = _split_dependencies(dependant.dependencies)
    head = dataclasses.replace(only_dependencies, dependencies=solved) if solved else None
    plain_calls: list[tuple[str, Callable[..., Any], str | None]] = [
        (dependency.name, dependency.call, dependency.request_param_name)  # type: ignore[misc]
        for dependency in plain  # _is_plain: a name and a call
    ]

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
        direct = bool(plain_calls) and not (
            overrides is not None
            and overrides.dependency_overrides
            and any(call in overrides.dependency_overrides for _, call, _ in plain_calls)
        )
        solving = head if direct else all_dependencies
        if solving is not None:
            solved = await solve_dependencies(
                request=request,
                dependant=solving,
                body=body,
                dependency_overrides_provider=overrides,
                async_exit_stack=exit_stack,
                embed_body_fields=False,
            )
            values.update(solved.values)
            errors.extend(solved.errors)
            background = solved.background_tasks
        if direct:
            called: dict[Any, Any] = {}  # as FastAPI's cache: each call once per request
            for name, plain_call, request_param in plain_calls:
                if plain_call not in called:
                    arguments = {request_param: request} if request_param else {}
                    called[plain_call] = await plain_call(**arguments)
                values[name] = called[plain_call]
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

    return handler, all(reader.planned for reader, _ in readers), bool(plain_calls)


class FastRoute(APIRoute):
    """An APIRoute whose handler skips what its declaration does not need (see the module doc)."""

    # The handlers built for this route's mounts, by the app they were mounted in (the mount's
    # dependency_overrides_provider): one router serves every app a test suite creates.
    choices: "weakref.WeakKeyDictionary[Any, list[HandlerChoice]]"

    def get_route_handler(self) -> Handler:
        # FastAPI's own handler for this build: the fast one falls back to it, and it is what
        # runs whenever the fast one cannot be trusted to see the whole declaration.
        standard = super().get_route_handler()
        problems = internals.route_handler_problems()
        if problems:
            _log_once("route_runs_standard_handler", reason="; ".join(problems))
            return standard
        route = _as_included(self)
        if route is None:
            # Declared, not (yet) mounted: FastAPI builds this handler when the route is made,
            # and again for each include_router; only those builds see the whole declaration.
            return standard
        methods = tuple(sorted(self.methods or ()))
        reason = _unsupported(route)
        if reason is not None:
            _log_once("route_runs_standard_handler", path=route.path, reason=reason)
            choice, handler = (
                HandlerChoice(methods, route.path, False, reason, False, False),
                standard,
            )
        else:
            handler, readers, dependencies = _fast_handler(route, standard)
            choice = HandlerChoice(methods, route.path, True, None, readers, dependencies)
        self._record(route, choice)
        return handler

    def _record(self, route: Any, choice: HandlerChoice) -> None:
        if not hasattr(self, "choices"):
            self.choices = weakref.WeakKeyDictionary()
        app = route.dependency_overrides_provider
        if app is not None:
            self.choices.setdefault(app, []).append(choice)


def build_route_handlers(app: FastAPI) -> list[HandlerChoice]:
    """Build every mounted route's handler now, at start-up; return the choices made.

    FastAPI builds the handler of a route in an included router when the route is first matched;
    built here, every route's choice of handler is made, and logged, before any traffic.
    """
    problem = internals.ITER_ROUTE_CONTEXTS.problem()
    if problem is not None:
        _log_once("route_handlers_built_on_first_request", reason=problem)
        return []
    problems = "; ".join(internals.route_handler_problems())
    choices: list[HandlerChoice] = []
    seen: set[int] = set()
    for context in internals.ITER_ROUTE_CONTEXTS.get()(app.router.routes):
        route = context.original_route
        if not isinstance(route, FastRoute):
            continue
        if problems:  # every mount runs FastAPI's standard handler
            methods = tuple(sorted(route.methods or ()))
            choices.append(HandlerChoice(methods, context.path, False, problems, False, False))
        elif id(route) not in seen:
            seen.add(id(route))
            choices += getattr(route, "choices", {}).get(app, [])
    return choices


def resource_router(
    prefix: str = "", *, tags: list[str | Enum] | None = None, **options: Any
) -> APIRouter:
    """The router of one resource: every route it declares runs as a FastRoute.

    Takes APIRouter's keyword arguments (`dependencies=[Depends(guard)]`, `responses`,
    `deprecated`, ...), so a guard is added as with any FastAPI router (issue #33).
    """
    if "route_class" in options:
        raise TypeError("resource_router() routes are FastRoutes: route_class cannot be changed")
    return APIRouter(prefix=prefix, tags=tags, route_class=FastRoute, **options)
