"""Which names a resource (and a package) may take: one rule for the bake's hook and the generator."""

import keyword
import re
import sys

SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
# Names that would shadow a module of the generated service or of the standard library, a library
# it imports, or a path it serves.
MODULES = {
    "app", "settings", "settings_sources", "db", "kit", "serving", "errors", "responses", "health",
    "observability", "devdb", "scaffold", "tests", "migrations", "loadtest", "test", "metrics",
    "healthz", "readyz", "docs", "openapi", "asyncpg", "fastapi", "pydantic", "uvicorn",
    "structlog", "alembic", "typing", "json", "asyncio", "logging", "http", "email", "string",
    "types", "time", "random",
}  # fmt: skip
# A resource's plural names its table: SQL key words PostgreSQL reserves cannot.
SQL_TABLE_RESERVED = {
    "all", "and", "any", "array", "as", "case", "check", "column", "constraint", "create",
    "default", "desc", "distinct", "do", "else", "end", "except", "false", "fetch", "for",
    "foreign", "from", "grant", "group", "having", "in", "into", "is", "join", "limit", "not",
    "null", "offset", "on", "only", "or", "order", "primary", "references", "returning",
    "select", "table", "then", "to", "true", "union", "unique", "user", "using", "when",
    "where", "window", "with",
}  # fmt: skip


def resource_name_problems(singular: str, plural: str) -> list[str]:
    """What is wrong with a resource's names, one line each (empty: nothing)."""
    found = []
    for option, value in (("resource", singular), ("resource_plural", plural)):
        if SNAKE_CASE.fullmatch(value) is None:
            found.append(f"{option} {value!r} is not snake_case (e.g. 'line_item')")
        elif keyword.iskeyword(value) or value in MODULES or value in sys.stdlib_module_names:
            found.append(f"{option} {value!r} is a reserved word: pick another name")
    if SNAKE_CASE.fullmatch(plural) and plural in SQL_TABLE_RESERVED:
        found.append(f"resource_plural {plural!r} is an SQL key word: it names the table")
    if singular == plural:
        found.append(f"resource_plural {plural!r} must differ from resource")
    return found
