"""Refuse option sets that would bake a broken project, with one clear line each."""

import keyword
import re
import sys

SLUG = "{{ cookiecutter.project_slug }}"
PACKAGE = "{{ cookiecutter.package_name }}"
RESOURCE = "{{ cookiecutter.resource }}"
RESOURCE_PLURAL = "{{ cookiecutter.resource_plural }}"

SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
# Names that would shadow a module of the generated service, the standard library or SQL.
RESERVED = {
    "app",
    "settings",
    "db",
    "errors",
    "responses",
    "health",
    "observability",
    "devdb",
    "tests",
    "migrations",
    "loadtest",
    "test",
    "metrics",
    "healthz",
    "readyz",
    "docs",
    "openapi",
    "select",
    "table",
    "user",
    "order",
    "group",
    "limit",
    "offset",
    "where",
    "asyncpg",
    "fastapi",
    "pydantic",
    "uvicorn",
    "structlog",
    "alembic",
    "typing",
    "json",
    "asyncio",
    "logging",
    "http",
    "email",
    "string",
    "types",
    "time",
    "random",
}


def problems() -> list[str]:
    found = []
    if not SLUG_PATTERN.match(SLUG):
        found.append(
            f"project_slug {SLUG!r} is not a valid name: use lowercase letters, digits and "
            "single hyphens, starting with a letter (e.g. 'inventory-service')"
        )
    if not PACKAGE.isidentifier() or keyword.iskeyword(PACKAGE) or not SNAKE_CASE.match(PACKAGE):
        found.append(f"package_name {PACKAGE!r} is not a lowercase Python identifier")
    elif PACKAGE in RESERVED or PACKAGE in sys.stdlib_module_names:
        found.append(f"package_name {PACKAGE!r} is a reserved word: it would shadow a module")
    for option, value in (("resource", RESOURCE), ("resource_plural", RESOURCE_PLURAL)):
        if not SNAKE_CASE.match(value):
            found.append(f"{option} {value!r} is not snake_case (e.g. 'line_item')")
        elif keyword.iskeyword(value) or value in RESERVED or value in sys.stdlib_module_names:
            found.append(f"{option} {value!r} is a reserved word: pick another name")
    if RESOURCE == RESOURCE_PLURAL:
        found.append(f"resource_plural {RESOURCE_PLURAL!r} must differ from resource")
    if RESOURCE_PLURAL == PACKAGE:
        found.append(f"resource_plural {RESOURCE_PLURAL!r} must differ from package_name")
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(f"ERROR: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
