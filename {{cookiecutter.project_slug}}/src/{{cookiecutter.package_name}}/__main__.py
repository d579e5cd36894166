"""`python -m {{ cookiecutter.package_name }}`: one uvicorn worker on uvloop + httptools."""

import sys

import uvicorn
from pydantic import ValidationError

from .app import create_app
from .limits import use_problem_json_for_overload
from .settings import Settings, describe_error


def main() -> int:
    try:
        settings = Settings()
    except ValidationError as error:
        print(describe_error(error), file=sys.stderr)
        return 2
    use_problem_json_for_overload()
    trusted_proxies = settings.forwarded_allow_ips.strip()
    # One worker per core: more workers on one core only add context switches.
    uvicorn.run(
        create_app(settings),
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
        # The proxy-headers middleware costs time on every request: only on when a proxy is named.
        proxy_headers=bool(trusted_proxies),
        forwarded_allow_ips=trusted_proxies or None,
        # Our access log (observability/access_log.py) replaces uvicorn's; no version leak.
        access_log=False,
        # uvicorn's own records go to the root logger, which configure_logging renders as JSON
        # lines through the same redaction; uvicorn's default config would print them as text.
        log_config=None,
        server_header=False,
        log_level=settings.log_level,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
