"""`python -m {{ cookiecutter.package_name }}`: the settings from the environment, then the server."""

import sys

from pydantic import ValidationError

from .serving import server
from .settings import Settings
from .settings_sources import describe_error


def main() -> int:
    try:
        settings = Settings()
    except ValidationError as error:
        print(describe_error(error), file=sys.stderr)
        return 2
    problem = server.framework_problem()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    return 0 if server.run(settings) else 3  # 3: uvicorn's start-up failure


if __name__ == "__main__":
    sys.exit(main())
