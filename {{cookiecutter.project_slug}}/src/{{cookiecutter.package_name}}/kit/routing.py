"""FastRoute: a FastAPI route that runs its own declaration with less per-request machinery.

Set once per router (`APIRouter(route_class=FastRoute)`, as `resource_router()` does); each route
is still declared the FastAPI way, and that one declaration gives the OpenAPI document, the
validation, the dependencies and the execution. What FastAPI's general handler does on every
request and these routes do not need is skipped: parsing cookies and the query string of a route
that declares none, building a spare Response for headers set by dependencies, walking an empty
dependency list. Every parameter is still validated by FastAPI's own functions against the
declared fields, and every dependency (of the app, an included router, the router or the route:
auth first of all) runs for every request. A route whose dependencies are all `async def`
functions (or objects, like FastAPI's security schemes) taking at most the request, their
SecurityScopes and other such dependencies has them planned once (PlannedDependency) and called
in solve_dependencies' order under its cache keys; any other (parameters to validate, `yield`,
an override of one of them) is solved by FastAPI's own `solve_dependencies`.

The fast handler runs only where it is known to see the whole declaration: a route FastAPI
mounted through include_router, built while FastAPI's inclusion context names it (that context's
dependant carries the dependencies of every router on the way). Anything else runs FastAPI's
standard handler, decided when the route is built and logged once: a route used without
include_router, a declaration this handler does not implement (cookies, forms, a sync or
streaming endpoint, an endpoint not returning a Response, ...), or a FastAPI whose internals
(fastapi_internals.py) are missing or reshaped.
"""

import dataclasses
import functools
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
from fastapi.security import SecurityScopes
from pydantic_core import PydanticUndefined, from_json
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from . import fastapi_internals as internals
from .media_types import is_json
from .param_reader import ParamReader

logger = structlog.get_logger(__name__)

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
# A route's answer to a request that came without FastAPI's exit stacks; None when this request
# needs them after all (a dependency overridden since start-up is solved by FastAPI).
DirectHandler = Callable[[Request], Coroutine[Any, Any, Response | None]]


@dataclass(frozen=True, slots=True)
class HandlerChoice:
    """Which handler a mounted route runs, and why (for the log and the contract test)."""

    methods: tuple[str, ...]
    path: str
    fast: bool
    reason: str | None  # why not fast, or None
    planned_readers: bool  # every parameter reader planned (param_reader.py), when fast
    planned_dependencies: bool  # every dependency called directly (PlannedDependency), when fast
    planned_body: bool = False  # the body validated without request_body_to_args, when fast


@dataclass(frozen=True, slots=True)
class FastMount:
    """What the dispatch (dispatch.py) may run for one include_router mount of a FastRoute, held
    by that mount's own context (fastapi_internals.hold_mount), so that two mounts with one path
    and method never share it: the fast handler runs there, and `direct` is its answer without
    FastAPI's request wrapper, or None when a request may need that wrapper's exit stacks."""

    direct: DirectHandler | None


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
        # One call into pydantic's parser, which gives what json.loads gives for every document
        # it accepts (big integers, 1e400, NaN, duplicate keys: tests/kit/test_body_reader.py);
        # what it refuses (a lone surrogate, a BOM, UTF-16, malformed JSON) json.loads decides,
        # with FastAPI's value or FastAPI's error.
        return from_json(raw, cache_strings="keys")
    except ValueError:
        pass
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


@dataclass(frozen=True, slots=True)
class PlannedDependency:
    """A dependency FastRoute calls itself, worked out once per route: what solve_dependencies
    works out again on every request (its cache key, how to call it) is fixed here."""

    call: Callable[..., Coroutine[Any, Any, Any]]
    name: str | None  # the parameter it fills, None for `dependencies=[...]`
    request_params: tuple[str, ...]  # the request, as Request or as HTTPConnection
    security_scopes_param: str | None
    scopes: tuple[str, ...]  # what its SecurityScopes parameter receives
    cache_key: Any  # solve_dependencies' own key for it (the call, its scopes)
    use_cache: bool
    dependencies: tuple["PlannedDependency", ...]


_SPECIAL_PARAMS = ("websocket", "response", "background_tasks")


def _plan(dependency: Dependant) -> PlannedDependency | None:
    """The dependency and all of its own as FastRoute may call them, or None when any of them is
    more than an `async def` taking the request (or its HTTPConnection), its SecurityScopes and
    other such dependencies: parameters to validate, a `yield`, a scope, a concurrency limit or
    another special parameter take solve_dependencies."""
    call = dependency.call
    try:
        hash(call)  # the overrides' and the cache's key, as in solve_dependencies
    except TypeError:
        return None
    if (
        call is None
        or internals.IS_GEN_CALLABLE.get()(call)
        or internals.IS_ASYNC_GEN_CALLABLE.get()(call)
        or not internals.IS_COROUTINE_CALLABLE.get()(call)
        or any(
            getattr(dependency, f"{kind}_params")
            for kind in ("path", "query", "header", "cookie", "body")
        )
        or any(getattr(dependency, f"{name}_param_name") is not None for name in _SPECIAL_PARAMS)
        or getattr(dependency, "scope", None) is not None
        or getattr(dependency, "concurrency", None) is not None
    ):
        return None
    own = [_plan(inner) for inner in dependency.dependencies]
    if None in own:
        return None
    return PlannedDependency(
        call=call,
        name=dependency.name,
        request_params=tuple(
            name
            for name in (dependency.request_param_name, dependency.http_connection_param_name)
            if name is not None
        ),
        security_scopes_param=dependency.security_scopes_param_name,
        scopes=tuple(internals.GET_OAUTH_SCOPES.get()(dependant=dependency)),
        cache_key=internals.GET_CACHE_KEY.get()(dependant=dependency),
        use_cache=dependency.use_cache,
        dependencies=tuple(planned for planned in own if planned is not None),
    )


def _plan_all(dependencies: list[Dependant]) -> tuple[PlannedDependency, ...] | None:
    """Every dependency of a route planned, or None: then solve_dependencies solves them all."""
    if internals.dependency_plan_problem() is not None:
        return None
    planned = [_plan(dependency) for dependency in dependencies]
    if None in planned:
        return None
    return tuple(dependency for dependency in planned if dependency is not None)


def _calls_of(planned: tuple[PlannedDependency, ...]) -> frozenset[Any]:
    return frozenset(
        call
        for dependency in planned
        for call in (dependency.call, *_calls_of(dependency.dependencies))
    )


async def _solve_planned(
    planned: tuple[PlannedDependency, ...], request: Request, cache: dict[Any, Any]
) -> dict[str, Any]:
    """What solve_dependencies gives for these dependencies, in its order: a dependency's own
    dependencies first, then its cached value or its call; every value cached under its key."""
    values: dict[str, Any] = {}
    for dependency in planned:
        arguments = (
            await _solve_planned(dependency.dependencies, request, cache)
            if dependency.dependencies
            else {}
        )
        for name in dependency.request_params:
            arguments[name] = request
        if dependency.security_scopes_param is not None:
            arguments[dependency.security_scopes_param] = SecurityScopes(list(dependency.scopes))
        key = dependency.cache_key
        if dependency.use_cache and key in cache:
            solved = cache[key]
        else:
            solved = await dependency.call(**arguments)
        if dependency.name is not None:
            values[dependency.name] = solved
        cache.setdefault(key, solved)
    return values


BodyReader = Callable[[Any], tuple[dict[str, Any], list[Any]]]


def _single_body_reader(body_fields: list[Any]) -> BodyReader | None:
    """What request_body_to_args does for this route's body, worked out once: for one body
    parameter, not embedded and not a form, it validates the decoded body as the parameter with
    `_validate_value_with_model_field` at ("body",); the checks that choose that branch are made
    here instead of on every request. None when they choose another branch, or a FastAPI piece
    they need is missing (request_body_to_args then reads every body)."""
    if internals.body_reader_problems() or len(body_fields) != 1:
        return None
    (parameter,) = body_fields
    if internals.SHOULD_EMBED_BODY_FIELDS.get()(body_fields):
        return None
    if internals.GET_FORM_MODELS.get()(parameter):
        return None
    validate = internals.VALIDATE_VALUE.get()
    name, loc = parameter.name, ("body",)

    def read(body: Any) -> tuple[dict[str, Any], list[Any]]:
        value, errors = validate(field=parameter, value=body, values={}, loc=loc)
        return {name: value}, errors

    return read


def _fast_handler(
    route: Any, standard: Handler
) -> tuple[Handler, DirectHandler | None, bool, bool, bool]:
    """The handler; the route's answer without FastAPI's exit stacks, when it needs none;
    whether every parameter reader is planned, the dependencies are called directly, the body
    read by its planned reader."""
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
    read_single_body = _single_body_reader(body_fields) if body_fields else None
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
    # solve_dependencies works out each dependency's cache key and how to call it on every
    # request (~30 us for DatabaseDep alone; an API key guard and its two dependencies cost more
    # than the rest of a by-id request): planned once here, they are called directly, unless
    # one of them is overridden.
    planned = _plan_all(dependant.dependencies) if dependant.dependencies else None
    planned_calls = _calls_of(planned) if planned else frozenset()

    async def respond(request: Request, exit_stack: Any) -> Response | None:
        """The route's answer; None, before reading anything, when the request needs
        solve_dependencies and no exit stack came with it (the dispatch's direct call)."""
        use_plan = planned and not (
            overrides is not None
            and overrides.dependency_overrides
            and not planned_calls.isdisjoint(overrides.dependency_overrides)
        )
        if not use_plan and all_dependencies is not None and exit_stack is None:
            return None
        body = await _read_body(request, strict_content_type) if body_fields else PydanticUndefined
        values: dict[str, Any] = {}
        errors: list[Any] = []
        background = None
        if use_plan:
            values.update(await _solve_planned(planned, request, {}))  # type: ignore[arg-type]
        elif all_dependencies is not None:
            solved = await solve_dependencies(
                request=request,
                dependant=all_dependencies,
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
            if read_single_body is not None:
                found, failed = read_single_body(body)
            else:
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
        response = await respond(request, exit_stack)
        assert response is not None  # an exit stack was given
        return response

    # The route's answer with no exit stack: a partial, not a coroutine of its own (one frame
    # fewer on every dispatched request).
    direct: DirectHandler = functools.partial(respond, exit_stack=None)

    # Without dependencies to solve, a request needs none of the exit stacks FastAPI's request
    # wrapper opens: the dispatch may call the route directly (dispatch.py).
    needs_stacks = all_dependencies is not None and not planned
    return (
        handler,
        None if needs_stacks else direct,
        all(reader.planned for reader, _ in readers),
        bool(planned),
        read_single_body is not None,
    )


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
            handler, direct, readers, dependencies, body = _fast_handler(route, standard)
            choice = HandlerChoice(methods, route.path, True, None, readers, dependencies, body)
            # The mount's own context holds what the dispatch may run for it; without that (a
            # context that takes no attribute) the dispatch leaves this mount to FastAPI's router.
            if not internals.hold_mount(route, FastMount(direct)):
                _log_once("route_taken_by_fastapi_router", path=route.path, reason="no mount hold")
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
    `deprecated`, ...), so a guard is added as with any FastAPI router.
    """
    if "route_class" in options:
        raise TypeError("resource_router() routes are FastRoutes: route_class cannot be changed")
    return APIRouter(prefix=prefix, tags=tags, route_class=FastRoute, **options)
