"""The server's own over-capacity answer (uvicorn's --limit-concurrency) is problem+json too."""

from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http import h11_impl, httptools_impl

from .errors import RETRY_AFTER_SECONDS, problem


async def _service_unavailable(scope: Scope, receive: Receive, send: Send) -> None:
    response = problem(
        503,
        "The server is at its concurrency limit; retry shortly.",
        headers={"Retry-After": RETRY_AFTER_SECONDS, "Connection": "close"},
    )
    await response(scope, receive, send)


def use_problem_json_for_overload() -> None:
    """Make uvicorn's --limit-concurrency answer problem+json instead of text/plain.

    uvicorn answers excess load itself, before the app runs, with the module-level
    `service_unavailable` app; swapping that app keeps the answer as cheap and adds no middleware.
    """
    httptools_impl.service_unavailable = _service_unavailable  # type: ignore[attr-defined,assignment]
    h11_impl.service_unavailable = _service_unavailable  # type: ignore[attr-defined,assignment]
