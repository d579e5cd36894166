"""`python -m {{ cookiecutter.package_name }}`: one uvicorn worker on uvloop + httptools."""

import asyncio
import sys

import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError

from .app import create_app
from .limits import use_problem_json_for_overload
from .observability.metrics_listener import metrics_listener
from .settings import Settings, describe_error


async def _serve(server: uvicorn.Server, app: FastAPI, settings: Settings) -> None:
    """The traffic server, with the /metrics listener on METRICS_PORT beside it."""
    async with metrics_listener(app.state.metrics, settings.host, settings.metrics_port):
        await server.serve()


def main() -> int:
    try:
        settings = Settings()
    except ValidationError as error:
        print(describe_error(error), file=sys.stderr)
        return 2
    use_problem_json_for_overload()
    app = create_app(settings)
    # One worker per core: more workers on one core only add context switches.
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        workers=1,
        # Above this many open connections or in-flight requests uvicorn answers 503 at once,
        # before the app runs: excess load is shed, not queued. It counts idle keep-alive
        # connections too, so it must exceed the connections a load balancer keeps open.
        limit_concurrency=settings.limit_concurrency,
        backlog=settings.backlog,
        timeout_keep_alive=int(settings.timeout_keep_alive),
        timeout_graceful_shutdown=int(settings.timeout_graceful_shutdown),
        # X-Forwarded-* from FORWARDED_ALLOW_IPS are applied in the middleware stack (middleware/).
        proxy_headers=False,
        # Our access log (observability/access_log.py) replaces uvicorn's; no version leak.
        access_log=False,
        # uvicorn's own records go to the root logger, which configure_logging renders as JSON
        # lines through the same redaction; uvicorn's default config would print them as text.
        log_config=None,
        server_header=False,
        log_level=settings.log_level,
    )
    server = uvicorn.Server(config)
    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
        runner.run(_serve(server, app, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
