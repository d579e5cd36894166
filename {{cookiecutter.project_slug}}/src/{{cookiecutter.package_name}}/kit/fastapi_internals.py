"""Every private or undocumented FastAPI name the kit uses, in one place, checked once.

FastRoute (routing.py) and ParamReader (param_reader.py) run a route's own declaration with FastAPI's
own functions, some of which are not public API. A FastAPI release may move, rename or reshape
any of them; the version range in pyproject.toml stops below the next release line, and the
bake's tests/kit/test_framework_contract.py holds each one to the shape used here. At run time a
missing or reshaped name never means a weaker path: a route whose handler needs it runs FastAPI's
standard handler, a parameter reader that needs it reads through `request_params_to_args`, and
one log line says which name and why (see `problems`). The dispatch (dispatch.py) reads how
FastAPI's router mounts an included route and what it puts in the scope, and Starlette's
exception handler tables: without any of them every request takes FastAPI's router.
"""

import dataclasses
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
from types import ModuleType
from typing import Any

from fastapi import _compat
from fastapi import routing as fastapi_routing
from fastapi.dependencies import models as dependency_models
from fastapi.dependencies import utils as dependency_utils
from fastapi.middleware import asyncexitstack
from starlette import convertors
from starlette.middleware.exceptions import ExceptionMiddleware

try:
    from starlette import _exception_handler as starlette_exception_handler
except ImportError:  # a Starlette without it: its names are missing, the dispatch stays off
    starlette_exception_handler = ModuleType("starlette._exception_handler")


@dataclass(slots=True)
class Internal:
    """A name in a FastAPI module, and the keyword parameters the kit passes it (when a function).

    Not frozen: the contract test renames one to see the kit fall back to FastAPI's plain path.
    """

    module: ModuleType
    name: str
    parameters: tuple[str, ...] = ()

    @property
    def qualname(self) -> str:
        return f"{self.module.__name__}.{self.name}"

    def get(self) -> Any:
        return getattr(self.module, self.name)

    def problem(self) -> str | None:
        """Why the kit cannot use it as it is, or None."""
        value = getattr(self.module, self.name, None)
        if value is None:
            return f"{self.qualname} is missing"
        if not self.parameters:
            return None
        try:
            accepted = inspect.signature(value).parameters
        except (TypeError, ValueError):
            return f"{self.qualname} is not a function"
        absent = [name for name in self.parameters if name not in accepted]
        return f"{self.qualname} takes no {', '.join(absent)}" if absent else None


# The context FastAPI sets while it builds the handler of a route it mounted through
# include_router: its dependant carries the dependencies of the app and of every router.
EFFECTIVE_ROUTE_CONTEXT = Internal(fastapi_routing, "_effective_route_context_var")
# Every mounted route with its inclusion context (builds the handlers of included routers).
ITER_ROUTE_CONTEXTS = Internal(fastapi_routing, "iter_route_contexts")
SOLVE_DEPENDENCIES = Internal(
    dependency_utils,
    "solve_dependencies",
    (
        "request",
        "dependant",
        "body",
        "dependency_overrides_provider",
        "async_exit_stack",
        "embed_body_fields",
    ),
)
REQUEST_BODY_TO_ARGS = Internal(
    dependency_utils, "request_body_to_args", ("body_fields", "received_body", "embed_body_fields")
)
REQUEST_PARAMS_TO_ARGS = Internal(
    dependency_utils, "request_params_to_args", ("fields", "received_params")
)
# What request_params_to_args works out per request, worked out once per route by ParamReader.
GET_PARAM_ALIASES = Internal(dependency_utils, "_get_param_aliases", ("field",))
GET_PARAM_MODEL = Internal(dependency_utils, "_get_param_model", ("field",))
IS_JSON_FIELD = Internal(dependency_utils, "_is_json_field", ("field",))
VALIDATE_VALUE = Internal(
    dependency_utils, "_validate_value_with_model_field", ("field", "value", "values", "loc")
)
FIELD_IS_SEQUENCE = Internal(_compat, "field_annotation_is_sequence", ("annotation",))
# The fields of a query parameter model, as FastAPI reads them (a list route's filters).
GET_CACHED_MODEL_FIELDS = Internal(dependency_utils, "get_cached_model_fields", ("model",))

# The checks request_body_to_args makes on every request to choose its branch for one body
# parameter, made once per route by FastRoute's body reader (routing.py).
SHOULD_EMBED_BODY_FIELDS = Internal(dependency_utils, "_should_embed_body_fields", ("fields",))
GET_FORM_MODELS = Internal(dependency_utils, "_get_form_models", ("field",))
BODY_READER = (SHOULD_EMBED_BODY_FIELDS, GET_FORM_MODELS, VALIDATE_VALUE)

# What FastRoute plans a dependency with (routing.py), once per route instead of per request: the
# key solve_dependencies caches a dependency's value under, and how it tells how to call one.
GET_CACHE_KEY = Internal(dependency_models, "_get_cache_key", ("dependant",))
IS_COROUTINE_CALLABLE = Internal(dependency_models, "_is_coroutine_callable", ("call",))
IS_GEN_CALLABLE = Internal(dependency_models, "_is_gen_callable", ("call",))
IS_ASYNC_GEN_CALLABLE = Internal(dependency_models, "_is_async_gen_callable", ("call",))
# The scopes a dependency's SecurityScopes parameter receives: its own and its dependents'.
GET_OAUTH_SCOPES = Internal(dependency_models, "_get_oauth_scopes", ("dependant",))
DEPENDENCY_PLAN = (
    GET_CACHE_KEY,
    IS_COROUTINE_CALLABLE,
    IS_GEN_CALLABLE,
    IS_ASYNC_GEN_CALLABLE,
    GET_OAUTH_SCOPES,
)

# The route's dependant is copied with its own parameters emptied (dataclasses.replace), so that
# solve_dependencies solves only the dependencies: these must stay dataclass fields.
DEPENDANT_FIELDS = (
    "call",
    "dependencies",
    "path_params",
    "query_params",
    "header_params",
    "cookie_params",
    "body_params",
    "request_param_name",
    "websocket_param_name",
    "http_connection_param_name",
    "response_param_name",
    "background_tasks_param_name",
    "security_scopes_param_name",
)
# Every field a Dependant has in the FastAPI versions the kit knows. FastRoute calls a plain
# dependency itself (routing.py) only while Dependant has no other field: a field added by a
# release may change what a dependency means, and then solve_dependencies solves them all.
KNOWN_DEPENDANT_FIELDS = frozenset(
    {
        *DEPENDANT_FIELDS,
        "name",
        "own_oauth_scopes",
        "parent_oauth_scopes",
        "use_cache",
        "path",
        "scope",
        "concurrency",
    }
)
# Attributes of a route FastRoute reads (FastAPI sets them on APIRoute and on its inclusion
# context alike).
ROUTE_ATTRIBUTES = (
    "dependant",
    "body_field",
    "_embed_body_fields",
    "strict_content_type",
    "dependency_overrides_provider",
    "path",
)
# Set in the request scope by FastAPI's request_response() wrapper: the exit stack that closes
# the dependencies' `yield`.
INNER_EXIT_STACK_KEY = "fastapi_inner_astack"

# What the fast handler cannot run without (request_params_to_args: the plain parameter reader).
ROUTE_HANDLER = (
    EFFECTIVE_ROUTE_CONTEXT,
    SOLVE_DEPENDENCIES,
    REQUEST_BODY_TO_ARGS,
    REQUEST_PARAMS_TO_ARGS,
)
# What ParamReader plans its reads with.
PARAM_READER = (
    GET_PARAM_ALIASES,
    GET_PARAM_MODEL,
    IS_JSON_FIELD,
    VALIDATE_VALUE,
    FIELD_IS_SEQUENCE,
    GET_CACHED_MODEL_FIELDS,
)


def _dependant_problem() -> str | None:
    dependant = getattr(dependency_models, "Dependant", None)
    if dependant is None or not dataclasses.is_dataclass(dependant):
        return "fastapi.dependencies.models.Dependant is not a dataclass"
    fields = {field.name for field in dataclasses.fields(dependant)}
    absent = [name for name in DEPENDANT_FIELDS if name not in fields]
    return f"Dependant has no field {', '.join(absent)}" if absent else None


@cache
def route_handler_problems() -> tuple[str, ...]:
    """What keeps FastRoute's handler from running, checked once; empty when nothing does."""
    problems = [internal.problem() for internal in ROUTE_HANDLER]
    return tuple(filter(None, [*problems, _dependant_problem()]))


@cache
def param_reader_problems() -> tuple[str, ...]:
    """What keeps ParamReader from planning its reads, checked once; empty when nothing does."""
    return tuple(filter(None, (internal.problem() for internal in PARAM_READER)))


@cache
def body_reader_problems() -> tuple[str, ...]:
    """What keeps FastRoute from planning a route's body read, checked once; empty when
    nothing does (else request_body_to_args reads every body)."""
    return tuple(filter(None, (internal.problem() for internal in BODY_READER)))


@cache
def dependency_plan_problem() -> str | None:
    """What keeps FastRoute from calling dependencies itself, or None."""
    for internal in DEPENDENCY_PLAN:
        if (problem := internal.problem()) is not None:
            return problem
    fields = {field.name for field in dataclasses.fields(dependency_models.Dependant)}
    unknown = sorted(fields - KNOWN_DEPENDANT_FIELDS)
    return f"Dependant has new fields: {', '.join(unknown)}" if unknown else None


def route_attribute_problem(route: Any) -> str | None:
    absent = [name for name in ROUTE_ATTRIBUTES if not hasattr(route, name)]
    return f"the route has no {', '.join(absent)}" if absent else None


# --- The route table the dispatch (dispatch.py) derives from the app's own routes. ---
# An include_router mount, and what it holds once FastAPI has built its routes' handlers.
INCLUDED_ROUTER = Internal(fastapi_routing, "_IncludedRouter")
EFFECTIVE_CANDIDATES = "effective_candidates"
ROUTES_VERSION = "_get_routes_version"
# What FastAPI's router puts in the scope of a request it routed to an included route.
FASTAPI_SCOPE_KEY = Internal(fastapi_routing, "_FASTAPI_SCOPE_KEY")
INCLUDED_ROUTER_KEY = Internal(fastapi_routing, "_FASTAPI_INCLUDED_ROUTER_KEY")
EFFECTIVE_ROUTE_CONTEXT_KEY = Internal(fastapi_routing, "_FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY")
# Attributes of an included route's context (FastAPI's _EffectiveRouteContext) the dispatch reads.
CONTEXT_ATTRIBUTES = (
    "original_route",
    "starlette_route",
    "app",
    "path",
    "path_regex",
    "param_convertors",
    "methods",
    "endpoint",
)
# Set by FastRoute on an included route's context (FastAPI's _EffectiveRouteContext, a dataclass
# without slots) while FastAPI builds that mount's handler: what the dispatch may run for this
# mount, held by the mount itself (two mounts may share a path and methods, never a context).
MOUNT_ATTRIBUTE = "fast_route_mount"
# The body limit FastAPI resolved for an included route (route, routers, app: max_body_size) and
# applies in the context's app; in FastAPI releases with body limits only.
BODY_LIMIT_WRAPPER = "wrap_app_with_body_limit"
CONTEXT_BODY_LIMIT = "max_body_size"
# Where a user declares a body limit, and the parameter that says it: a FastAPI whose routers or
# routes take it has body limits, whatever its wrapper is called.
BODY_LIMIT_DECLARATIONS = (
    fastapi_routing.APIRouter.__init__,
    fastapi_routing.APIRouter.include_router,
    fastapi_routing.APIRoute.__init__,
)
BODY_LIMIT_PARAMETER = "max_body_size"
# Where Starlette's ExceptionMiddleware keeps the app's handlers, and the scope key under which
# it hands them to request_response() (starlette/_exception_handler.py reads them there).
EXCEPTION_TABLES = ("_exception_handlers", "_status_handlers")
EXCEPTION_HANDLERS_SCOPE_KEY = "starlette.exception_handlers"
# Set by FastAPI's AsyncExitStackMiddleware; FastAPI's standard handler asserts it is there.
MIDDLEWARE_EXIT_STACK_KEY = "fastapi_middleware_astack"
# What FastAPI puts between Starlette's ExceptionMiddleware and the app's router.
EXIT_STACK_MIDDLEWARE = Internal(asyncexitstack, "AsyncExitStackMiddleware")


def router_behind(middleware: Any) -> Any | None:
    """The router the ExceptionMiddleware leads to, when FastAPI's AsyncExitStackMiddleware alone
    (keeping its stack under the scope key the dispatch sets) stands between them, as FastAPI
    builds its stack; None when anything else does (a layer the dispatch would skip)."""
    inner = getattr(middleware, "app", None)
    if (
        EXIT_STACK_MIDDLEWARE.problem() is not None
        or type(inner) is not EXIT_STACK_MIDDLEWARE.get()
    ):
        return None
    if getattr(inner, "context_name", None) != MIDDLEWARE_EXIT_STACK_KEY:
        return None
    return getattr(inner, "app", None)


# The convertors whose pattern never matches a "/": a parameter is then one path segment. Only
# these classes themselves (a subclass registered by the user may take a pattern with "/").
SEGMENT_CONVERTORS = (
    convertors.StringConvertor,
    convertors.IntegerConvertor,
    convertors.FloatConvertor,
    convertors.UUIDConvertor,
)
# The one of them whose conversion never raises (int() refuses more than 4,300 digits).
STRING_CONVERTOR = convertors.StringConvertor
# How request_response() applies the app's exception handlers around a route: the dispatch
# applies them the same way when it calls a route without request_response's exit stacks.
WRAP_HANDLING_EXCEPTIONS = Internal(
    starlette_exception_handler, "wrap_app_handling_exceptions", ("app", "conn")
)
DISPATCH = (
    EXIT_STACK_MIDDLEWARE,
    INCLUDED_ROUTER,
    FASTAPI_SCOPE_KEY,
    INCLUDED_ROUTER_KEY,
    EFFECTIVE_ROUTE_CONTEXT_KEY,
    WRAP_HANDLING_EXCEPTIONS,
)


@cache
def dispatch_problems() -> tuple[str, ...]:
    """What keeps the dispatch from deriving a route table, checked once; empty when nothing."""
    problems = [internal.problem() for internal in DISPATCH]
    included = getattr(fastapi_routing, INCLUDED_ROUTER.name, None)
    if included is not None and not callable(getattr(included, EFFECTIVE_CANDIDATES, None)):
        problems.append(f"{INCLUDED_ROUTER.qualname}.{EFFECTIVE_CANDIDATES} is missing")
    if not callable(getattr(fastapi_routing.APIRouter, ROUTES_VERSION, None)):
        problems.append(f"fastapi.routing.APIRouter.{ROUTES_VERSION} is missing")
    if not isinstance(getattr(fastapi_routing.APIRouter(), ROUTES_CHANGES, None), int):
        problems.append(f"fastapi.routing.APIRouter keeps no {ROUTES_CHANGES}")
    if not all(hasattr(ExceptionMiddleware(None), name) for name in EXCEPTION_TABLES):  # type: ignore[arg-type]
        problems.append("starlette's ExceptionMiddleware keeps no handler tables")
    if hasattr(fastapi_routing, BODY_LIMIT_WRAPPER) or _takes_body_limits():
        # A FastAPI with body limits: the dispatch must see each route's, or call none directly.
        context = getattr(fastapi_routing, "_EffectiveRouteContext", None)
        fields = dataclasses.fields(context) if dataclasses.is_dataclass(context) else ()
        if CONTEXT_BODY_LIMIT not in {field.name for field in fields}:
            problems.append(f"an included route's context keeps no {CONTEXT_BODY_LIMIT}")
    return tuple(filter(None, problems))


def _takes_body_limits() -> bool:
    for declaration in BODY_LIMIT_DECLARATIONS:
        try:
            if BODY_LIMIT_PARAMETER in inspect.signature(declaration).parameters:
                return True
        except (TypeError, ValueError):
            return True  # cannot tell: as if it did
    return False


def hold_mount(context: Any, mount: Any) -> bool:
    """Let an included route's context hold what the dispatch may run for it; False when the
    context takes no attribute (the dispatch then leaves the mount to FastAPI's router)."""
    try:
        setattr(context, MOUNT_ATTRIBUTE, mount)
    except (AttributeError, TypeError):
        return False
    return True


def mount_of(context: Any) -> Any:
    """What the context holds for the dispatch (hold_mount), or None."""
    return getattr(context, MOUNT_ATTRIBUTE, None)


def body_limit_of(context: Any) -> int | None:
    """The body limit FastAPI applies to this included route's requests, or None."""
    limit: int | None = getattr(context, CONTEXT_BODY_LIMIT, None)
    return limit


# Each APIRouter's own count of changes to its routes (what ROUTES_VERSION adds up).
ROUTES_CHANGES = "_routes_version"
routes_changes = attrgetter(ROUTES_CHANGES)


def routers_in(router: Any) -> list[Any]:
    """The router and every router it includes, however deep: what a route added to any of them
    changes (each keeps its own count, ROUTES_CHANGES)."""
    routers: list[Any] = []
    pending, included_router = [router], INCLUDED_ROUTER.get()
    while pending:
        current = pending.pop()
        if any(current is seen for seen in routers):
            continue
        routers.append(current)
        pending += [r.original_router for r in current.routes if isinstance(r, included_router)]
    return routers


def mounted_in_order(routes: list[Any], included: Any = None) -> Iterator[tuple[Any, Any]]:
    """(route or included route's context, the include_router mount it came through or None),
    in the order FastAPI's router tries them: each mount's candidates in place."""
    included_router = INCLUDED_ROUTER.get()
    for route in routes:
        if isinstance(route, included_router):
            for candidate in getattr(route, EFFECTIVE_CANDIDATES)():
                if isinstance(candidate, included_router):
                    yield from mounted_in_order([candidate], included)
                else:
                    yield candidate, route
        else:
            yield route, included


def context_problem(context: Any) -> str | None:
    absent = [name for name in CONTEXT_ATTRIBUTES if not hasattr(context, name)]
    return f"an included route has no {', '.join(absent)}" if absent else None


def exception_tables(middleware: Any) -> tuple[dict[Any, Any], dict[int, Any]] | None:
    """The handler tables of Starlette's ExceptionMiddleware, as it puts them in the scope."""
    if not isinstance(middleware, ExceptionMiddleware):
        return None
    tables = tuple(getattr(middleware, name, None) for name in EXCEPTION_TABLES)
    if not all(isinstance(table, dict) for table in tables):
        return None
    return tables  # type: ignore[return-value]
