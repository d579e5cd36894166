"""FastDispatch: a request reaches its route without FastAPI's router and its inner middleware.

The innermost layer of the service's stack (serving/middleware). For a request FastAPI's router
would send to a FastRoute with its fast handler, it does what the router, Starlette's
ExceptionMiddleware and FastAPI's AsyncExitStackMiddleware would do for it, and runs the app
FastAPI built for that route (request_response around the route's handler: its exit stacks, its
exception handling with the app's own handler tables, its body limit). A route that needs none
of that app's exit stacks (its dependencies are planned, or it has none: routing.py) and has no
body limit (`max_body_size` on it, its routers or the app) is called directly, inside Starlette's
own wrapper that applies the app's exception handlers as request_response does; a request that
needs the stacks after all (a dependency overridden since start-up) takes the app FastAPI built.
Either way ExceptionMiddleware's own wrapper goes around it, so that an exception a handler
raises is handled once more, as there. Everything else (no route, 405, a route on FastAPI's
standard handler, a route class wrapping its handler, a websocket route's path, a mount, a
root_path) goes down the standard stack, untouched.

The route table (route_table.py) says which route FastAPI's router would choose, and what that
route's own mount lets the dispatch run. What the table cannot prove equivalent switches the
dispatch off for the app, logged once, and so do a layer between ExceptionMiddleware and the
router, a router put in place of the one the stack calls, and any error while deriving the table.
"""

import weakref
from contextlib import AsyncExitStack
from typing import Any

import structlog
from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from . import fastapi_internals as internals
from .route_table import NotEquivalent, RoutesSeen, RouteTable

logger = structlog.get_logger(__name__)

_logged: set[str] = set()


def _log_once(event: str, **fields: Any) -> None:
    key = f"{event}:{sorted(fields.items())}"
    if key not in _logged:
        _logged.add(key)
        logger.warning(event, **fields)


# The dispatch of each app, so that a test can switch it off and compare (the differential test).
_dispatches: "weakref.WeakKeyDictionary[FastAPI, FastDispatch]" = weakref.WeakKeyDictionary()


def dispatch_of(app: FastAPI) -> "FastDispatch | None":
    return _dispatches.get(app)


class FastDispatch:
    """Innermost middleware: the app it wraps is FastAPI's ExceptionMiddleware and what follows."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.enabled = True
        self._table: RouteTable | None = None
        # The routes of an app the dispatch found it cannot serve: off until they change.
        self._off: RoutesSeen | None = None
        problems = internals.dispatch_problems()
        self._wrap: Any = internals.WRAP_HANDLING_EXCEPTIONS.get() if not problems else None
        self._fastapi_key: str = internals.FASTAPI_SCOPE_KEY.get() if not problems else ""
        self._handlers = internals.exception_tables(app)
        if self._handlers is None:
            problems = (*problems, "the next layer is not Starlette's ExceptionMiddleware")
        # The router FastAPI's stack calls: a route table derived from any other would not route
        # as that stack does, and a layer between them would be skipped.
        self._router = internals.router_behind(app)
        if self._router is None:
            problems = (*problems, "ExceptionMiddleware leads to more than the router")
        if problems:
            _log_once("requests_take_fastapi_router", reason="; ".join(problems))
            self.enabled = False

    def _current_table(self, app: Any) -> RouteTable | None:
        table = self._table
        if table is not None and table.seen.is_current(app):
            return table
        # Checked as cheaply as a table (FastAPI's routes_version costs an off app's every
        # request 28,000 instructions, a sixth of a dispatched one's: callgrind, in-process).
        off = self._off
        if off is not None and off.is_current(app):
            return None
        try:
            if app.router is not self._router:
                raise NotEquivalent("the app's router is not the one its middleware stack calls")
            table = RouteTable.derive(app)
        except Exception as error:
            # NotEquivalent, or a route of a shape this module does not know: FastAPI's router
            # answers (an error here would otherwise answer every request with a 500).
            reason = str(error) if isinstance(error, NotEquivalent) else repr(error)
            _log_once("requests_take_fastapi_router", reason=reason)
            self._table = None
            try:
                self._off = RoutesSeen.of(app)
            except Exception:  # then derived again (and refused) on each request
                self._off = None
            return None
        self._table = table
        _dispatches[app] = self
        return table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" and self.enabled:
            # Derived when the app starts, so that what it cannot serve is logged before traffic.
            self._current_table(scope["app"])
        if scope["type"] != "http" or not self.enabled or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        app = scope["app"]
        table = self._current_table(app)
        found = table.find(scope["path"], scope["method"]) if table is not None else None
        if found is None or "fastapi.telemetry" in scope:
            await self.app(scope, receive, send)
            return
        candidate, params = found
        # What Router.app, the included router and ExceptionMiddleware put in the scope on the
        # way to this route (fastapi/routing.py: _update_scope, _handle_selected).
        scope[internals.EXCEPTION_HANDLERS_SCOPE_KEY] = self._handlers
        if "router" not in scope:
            scope["router"] = app.router
        fastapi_key = self._fastapi_key
        fastapi_scope = scope.get(fastapi_key)
        if fastapi_scope is None:
            scope[fastapi_key] = dict(candidate.fastapi_scope)
        else:
            fastapi_scope.update(candidate.fastapi_scope)
        scope["endpoint"] = candidate.endpoint
        inherited = scope.get("path_params")
        scope["path_params"] = {**inherited, **params} if inherited else params
        scope["route"] = candidate.route
        route_app = candidate.app
        assert route_app is not None
        # ExceptionMiddleware's wrapper (outer) around what request_response does (inner), each
        # with a request of its own as there: the app's handlers are applied again to an
        # exception one of them raised (a LookupError handler raising HTTPException(404) answers
        # 404 both ways).
        wrap = self._wrap
        direct = candidate.direct
        if direct is not None:
            # The route's handler without request_response's exit stacks, in the wrapper that
            # applies the app's exception handlers as request_response does.
            request = Request(scope, receive, send)

            async def answer(scope: Scope, receive: Receive, send: Send) -> None:
                response = await direct(request)
                if response is None:
                    raise _NeedsExitStacks
                await response(scope, receive, send)

            try:
                await wrap(wrap(answer, request), Request(scope, receive, send))(
                    scope, receive, send
                )
                return
            except _NeedsExitStacks:
                pass  # nothing was read or sent: the route's app answers instead
        await wrap(_in_exit_stack(route_app), Request(scope, receive, send))(scope, receive, send)


class _NeedsExitStacks(BaseException):
    """Raised through the exception wrappers (which catch Exception only) when a request the
    dispatch called directly needs FastAPI's exit stacks after all."""


def _in_exit_stack(app: ASGIApp) -> ASGIApp:
    """The route's app (request_response around its handler) as FastAPI's
    AsyncExitStackMiddleware calls it: the route's handler may fall back to FastAPI's standard
    one (routing.py), which needs this stack."""

    async def in_exit_stack(scope: Scope, receive: Receive, send: Send) -> None:
        async with AsyncExitStack() as stack:
            scope[internals.MIDDLEWARE_EXIT_STACK_KEY] = stack
            await app(scope, receive, send)

    return in_exit_stack
