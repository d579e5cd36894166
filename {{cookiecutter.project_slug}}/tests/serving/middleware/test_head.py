"""middleware/head.py around a small inline ASGI app: HEAD reaches the app as GET."""

from starlette.types import Message, Receive, Scope, Send

from {{ cookiecutter.package_name }}.serving.middleware.head import HeadAsGetMiddleware


async def _never() -> Message:
    raise AssertionError("not called")


async def _record(seen: list[str], scope: Scope) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["method"])

    async def send(message: Message) -> None:
        pass

    await HeadAsGetMiddleware(app)(scope, _never, send)


async def test_head_reaches_the_app_as_get_and_leaves_the_servers_scope_alone() -> None:
    seen: list[str] = []
    scope: Scope = {"type": "http", "method": "HEAD", "path": "/"}
    await _record(seen, scope)
    assert seen == ["GET"]
    assert scope["method"] == "HEAD"  # the server reads it to drop the body


async def test_other_methods_and_scopes_pass_unchanged() -> None:
    seen: list[str] = []
    for method in ("GET", "POST", "DELETE"):
        await _record(seen, {"type": "http", "method": method, "path": "/"})
    assert seen == ["GET", "POST", "DELETE"]
