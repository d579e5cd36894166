"""`python -m {{ cookiecutter.package_name }}`: one uvicorn worker on uvloop + httptools."""

import sys

import uvicorn
from pydantic import ValidationError

from .app import create_app
from .settings import Settings, describe_error


def main() -> int:
    try:
        settings = Settings()
    except ValidationError as error:
        print(describe_error(error), file=sys.stderr)
        return 2
    # One worker per core: more workers on one core only add context switches.
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        workers=1,
        access_log=False,
        server_header=False,
        log_level=settings.log_level,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
