"""The route table of FastDispatch (dispatch.py): which route FastAPI's router would choose.

The table is derived from the app's own routes (`app.routes`, the included routers' candidates
FastAPI itself matches against), never from a second list: per request, the first route in
FastAPI's order whose literal segments equal the path's is confirmed by that route's own
`path_regex` and convertors, so the route chosen is the one FastAPI's router chooses, and what
runs is what that candidate (the mount's own context) holds: a route declared first to override
another, or the same router included twice, never runs the other mount's handler. It is derived
again whenever FastAPI's count of route changes moves (a route or router added after start-up)
or the app's list of routes no longer holds the same objects in the same order (edited in
place). What it cannot prove equivalent (NotEquivalent) switches the dispatch off for the app:
a mount or host route, a path parameter that may span segments (any convertor but Starlette's
own str, int, float and uuid), a route or router class that matches or routes requests its own
way, form limits, FastAPI internals (fastapi_internals.py) missing or reshaped.
"""

from dataclasses import dataclass
from operator import is_, itemgetter
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, APIRouter, APIWebSocketRoute
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp

from . import fastapi_internals as internals
from .routing import DirectHandler, FastMount, FastRoute

# How FastAPI's and Starlette's routes decide that they match a request. A route class with a
# `matches` of its own may take a request its path does not, or refuse one it does: the dispatch,
# which matches by path, cannot follow it.
_PATH_MATCHES = frozenset(
    {Route.matches, WebSocketRoute.matches, APIRoute.matches, APIWebSocketRoute.matches}
)
# What FastAPI's router calls on a route it chose (handle), and what builds the handler that runs
# (get_route_handler): a FastRoute class overriding either (FastAPI's documented way to wrap a
# route's handler) is run by FastAPI's stack, which calls what it overrides.
_RUN_HOOKS = ("handle", "get_route_handler")
# What FastAPI's router calls on the app's router and on each included one.
_ROUTER_HOOKS = ("__call__", "app", "matches", "handle")


def _overridden(cls: type, base: type, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if getattr(cls, name, None) is not getattr(base, name)]


class NotEquivalent(Exception):
    """The app has something the dispatch cannot prove it routes as FastAPI's router does."""


@dataclass(slots=True)
class _Candidate:
    """One route, in FastAPI's order: its literal segments and, when the dispatch may run it,
    what FastAPI's router would have put in the scope."""

    segments: int
    literals: Any  # itemgetter of the literal segments' positions (None: no literal segment)
    expected: Any  # what it gives for a path of this route: a segment, or a tuple of them
    path_regex: Any
    convertors: dict[str, Any]
    convert_may_fail: bool  # a convertor may raise (int() refuses more than 4,300 digits)
    methods: frozenset[str] | None
    app: ASGIApp | None  # None: FastAPI's standard stack answers it
    direct: DirectHandler | None  # the route called without request_response (dispatch.py)
    fastapi_scope: dict[str, Any]
    endpoint: Any
    route: Any


def _candidate(route: Any, included: Any) -> _Candidate:
    """`route` as FastAPI's router matches it: a route of the app, or an included route's context."""
    context = None
    target = route
    if included is not None:
        problem = internals.context_problem(route)
        if problem is not None:
            raise NotEquivalent(problem)
        if route.starlette_route is not None:  # a plain Starlette route in an included router
            target = route.starlette_route
        else:
            context = route
    if hasattr(target, "routes") or getattr(target, "path_regex", None) is None:
        # A mount or a host: FastAPI's router would hand it more than a match.
        raise NotEquivalent(f"{type(target).__name__} at {getattr(target, 'path', '?')}")
    for name, convertor in target.param_convertors.items():
        # Exactly these classes: a convertor of the user's on one of them may take any pattern.
        if type(convertor) not in internals.SEGMENT_CONVERTORS:
            raise NotEquivalent(f"{target.path}: the parameter {name} may span path segments")
    # A websocket route declares no methods: for an HTTP request whose path it matches, FastAPI's
    # stack answers (its router passes it by), as for any route the dispatch does not run.
    declared = getattr(target, "methods", None)
    methods = frozenset(declared) if declared else None
    original = context.original_route if context is not None else route
    # What FastAPI's router asks whether it matches: an included FastAPI route, else the route.
    matcher = type(original if context is not None else target)
    if matcher.matches not in _PATH_MATCHES:
        raise NotEquivalent(f"{target.path}: {matcher.__name__} matches requests its own way")
    # What this mount's own context holds (FastRoute set it while FastAPI built the handler in
    # context.app): never looked up by path and methods, which a later mount may share.
    mount = internals.mount_of(context) if context is not None else None
    runs_fast = (
        context is not None
        and context.app is not None
        and isinstance(original, FastRoute)
        and not _overridden(type(original), FastRoute, _RUN_HOOKS)
        and isinstance(mount, FastMount)
        and methods is not None
    )
    # A route with a body limit (max_body_size on the route, its routers or the app) is called
    # through context.app, where FastAPI applies that limit around its request wrapper.
    direct = (
        mount.direct
        if runs_fast and isinstance(mount, FastMount) and internals.body_limit_of(context) is None
        else None
    )
    parts = target.path.split("/")
    positions = [index for index, part in enumerate(parts) if "{" not in part]
    return _Candidate(
        segments=len(parts),
        literals=itemgetter(*positions) if positions else None,
        expected=itemgetter(*positions)(parts) if positions else None,
        path_regex=target.path_regex,
        convertors=target.param_convertors,
        convert_may_fail=any(
            type(convertor) is not internals.STRING_CONVERTOR
            for convertor in target.param_convertors.values()
        ),
        methods=methods,
        app=context.app if runs_fast and context is not None else None,
        direct=direct,
        fastapi_scope={
            internals.INCLUDED_ROUTER_KEY.get(): included,
            internals.EFFECTIVE_ROUTE_CONTEXT_KEY.get(): context,
        },
        endpoint=getattr(target, "endpoint", None),
        route=original,
    )


def _conversion_fails(candidate: _Candidate, path: str, parts: list[str]) -> bool:
    """Whether FastAPI's router, matching this path against this route, raises converting it."""
    if candidate.literals is not None and candidate.literals(parts) != candidate.expected:
        return False
    match = candidate.path_regex.match(path)
    if match is None:
        return False
    try:
        for name, value in match.groupdict().items():
            candidate.convertors[name].convert(value)
    except Exception:
        return True
    return False


def _same_routes(routes: list[Any], snapshot: tuple[Any, ...]) -> bool:
    """The same route objects in the same order (by identity: a route FastAPI's __eq__ finds
    equal may carry other dependencies)."""
    return len(routes) == len(snapshot) and all(map(is_, routes, snapshot))


@dataclass(slots=True)
class RoutesSeen:
    """What FastAPI's router routes an app's requests by, as it was when the dispatch looked."""

    app: Any
    routers: list[Any]  # the app's router and every router it includes
    versions: tuple[int, ...]  # the count of route changes of each
    # app.router.routes as they were: FastAPI's router reads that list on every request, so a
    # route put in it directly (appended, inserted, or set in place of another) changes routing.
    top_level: tuple[Any, ...]

    @classmethod
    def of(cls, app: Any, routers: list[Any] | None = None) -> "RoutesSeen":
        router = app.router
        routers = internals.routers_in(router) if routers is None else routers
        versions = tuple(map(internals.routes_changes, routers))
        return cls(app, routers, versions, tuple(router.routes))

    def is_current(self, app: Any) -> bool:
        # FastAPI's routes_version walks every router per call; each router's own count, read
        # in C, says the same (any change to any router moves its count): 4.6 us instead of 14.7
        # (timeit in-process, by-id table, busy host).
        return (
            app is self.app
            and _same_routes(app.router.routes, self.top_level)
            and tuple(map(internals.routes_changes, self.routers)) == self.versions
        )


@dataclass(slots=True)
class RouteTable:
    """The app's routes by number of path segments, each list in FastAPI's order."""

    seen: RoutesSeen  # what the table was derived from
    by_segments: dict[int, list[_Candidate]]

    @classmethod
    def derive(cls, app: FastAPI) -> "RouteTable":
        router = app.router
        if getattr(router, "form_limits", None):
            raise NotEquivalent("the app sets form limits")
        routers = internals.routers_in(router)
        for each in routers:
            if overridden := _overridden(type(each), APIRouter, _ROUTER_HOOKS):
                raise NotEquivalent(f"{type(each).__name__} overrides {', '.join(overridden)}")
        by_segments: dict[int, list[_Candidate]] = {}
        for route, included in internals.mounted_in_order(list(router.routes)):
            # FastAPI releases before form limits have none to honour.
            if included is not None and getattr(included.include_context, "form_limits", None):
                raise NotEquivalent("an included router sets form limits")
            candidate = _candidate(route, included)
            by_segments.setdefault(candidate.segments, []).append(candidate)
        return cls(RoutesSeen.of(app, routers), by_segments)

    def find(self, path: str, method: str) -> tuple[_Candidate, dict[str, Any]] | None:
        """The route FastAPI's router would run for this request, when it is one the dispatch
        runs, and its path parameters; None for anything else (FastAPI's stack answers)."""
        if path.endswith("\n"):  # "$" in a route's pattern matches before a final newline
            return None
        parts = path.split("/")
        last_regex = last_match = None
        for candidate in self.by_segments.get(len(parts), ()):
            # Each test is one FastAPI's Route.matches makes too; the cheap ones first.
            if candidate.methods is not None and method not in candidate.methods:
                # FastAPI's router goes on looking for a full match, and so do we; but it
                # converts a matching path's parameters before it looks at the method, and a
                # conversion that raises there is its answer (FastAPI's stack gives it).
                if candidate.convert_may_fail and _conversion_fails(candidate, path, parts):
                    return None
                continue
            if candidate.literals is not None and candidate.literals(parts) != candidate.expected:
                continue
            if candidate.path_regex is not last_regex:
                last_regex, last_match = candidate.path_regex, candidate.path_regex.match(path)
            if last_match is None:
                continue
            if candidate.app is None:
                return None
            try:
                params = {
                    name: candidate.convertors[name].convert(value)
                    for name, value in last_match.groupdict().items()
                }
            except Exception:
                # FastAPI's router raises it inside ExceptionMiddleware, where the app's
                # handlers apply (int() refuses more than 4,300 digits): let it.
                return None
            return candidate, params
        return None
