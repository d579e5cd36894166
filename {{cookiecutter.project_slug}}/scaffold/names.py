"""Which names a resource (and a package) may take: one rule for the bake's hook and the generator."""

import keyword
import re
import sys
from collections.abc import Iterable

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
# Words PostgreSQL reserves, or keeps for types and functions: none can name a table or a column
# unquoted (pg_get_keywords(), categories R and T; a test holds the list to the server's).
_SQL_RESERVED_WORDS = """
    all analyse analyze and any array as asc asymmetric authorization binary both case cast
    check collate collation column concurrently constraint create cross current_catalog
    current_date current_role current_schema current_time current_timestamp current_user
    default deferrable desc distinct do else end except false fetch for foreign freeze from
    full grant group having ilike in initially inner intersect into is isnull join lateral
    leading left like limit localtime localtimestamp natural not notnull null offset on only
    or order outer overlaps placing primary references returning right select session_user
    similar some symmetric system_user table tablesample then to trailing true union unique
    user using variadic verbose when where window with
"""
SQL_RESERVED = set(_SQL_RESERVED_WORDS.split())
# A resource's plural names its row type too (json_populate_record(NULL::<plural>, ...)), which
# no key word of PostgreSQL's category C can (row, values), nor a built-in type's name (text,
# date: pg_catalog is searched first), nor a name of PostgreSQL's own (pg_); a test holds the
# list to the server's.
_SQL_TYPE_WORDS = """
    aclitem any anyarray anycompatible anycompatiblearray anycompatiblemultirange
    anycompatiblenonarray anycompatiblerange anyelement anyenum anymultirange anynonarray
    anyrange between bigint bit bool boolean box bpchar bytea char character cid cidr circle
    coalesce cstring date datemultirange daterange dec decimal event_trigger exists extract
    fdw_handler float float4 float8 greatest grouping gtsvector index_am_handler inet inout
    int int2 int2vector int4 int4multirange int4range int8 int8multirange int8range integer
    internal interval json json_array json_arrayagg json_exists json_object json_objectagg
    json_query json_scalar json_serialize json_table json_value jsonb jsonpath
    language_handler least line lseg macaddr macaddr8 merge_action money name national nchar
    none normalize nullif numeric nummultirange numrange oid oidvector out overlay path
    point polygon position precision real record refcursor regclass regcollation regconfig
    regdictionary regnamespace regoper regoperator regproc regprocedure regrole regtype row
    setof smallint substring table_am_handler text tid time timestamp timestamptz timetz
    treat trigger trim tsm_handler tsmultirange tsquery tsrange tstzmultirange tstzrange
    tsvector txid_snapshot unknown uuid values varbit varchar void xid xid8 xml
    xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi
    xmlroot xmlserialize xmltable
"""
SQL_TYPE_NAMES = set(_SQL_TYPE_WORDS.split())
# The service's own tables and types (migrations/machinery, alembic's version table).
SERVICE_TABLES = {
    "idempotency_keys", "cursor_keys", "alembic_version", "pgqueuer", "pgqueuer_log",
    "pgqueuer_schedules", "pgqueuer_statistics", "pgqueuer_status", "pgqueuer_statistics_status",
}  # fmt: skip
# PostgreSQL keeps the first 63 bytes of a name and drops the rest without an error: two of a
# table's indexes would share one name, and a 409 could not name its field from its constraint.
POSTGRES_NAME_BYTES = 63
# A plural leaves room for its fields' index names, <plural>_<field>_id_idx.
MOST_PLURAL = POSTGRES_NAME_BYTES - len("_x_id_idx")


def resource_name_problems(singular: str, plural: str) -> list[str]:
    """What is wrong with a resource's names, one line each (empty: nothing)."""
    found = []
    for option, value in (("resource", singular), ("resource_plural", plural)):
        if SNAKE_CASE.fullmatch(value) is None:
            found.append(f"{option} {value!r} is not snake_case (e.g. 'line_item')")
        elif keyword.iskeyword(value) or value in MODULES or value in sys.stdlib_module_names:
            found.append(f"{option} {value!r} is a reserved word: pick another name")
    if SNAKE_CASE.fullmatch(plural) and plural in SQL_RESERVED:
        found.append(f"resource_plural {plural!r} is an SQL key word: it names the table")
    elif plural in SQL_TYPE_NAMES or plural.startswith("pg_"):
        found.append(
            f"resource_plural {plural!r} names the table's row type, a name PostgreSQL takes"
        )
    elif plural in SERVICE_TABLES:
        found.append(f"resource_plural {plural!r} is a table of the service's own")
    if len(plural) > MOST_PLURAL:
        found.append(
            f"resource_plural {plural!r} names the table: at most {MOST_PLURAL} characters "
            "(its fields' indexes are named <plural>_<field>_id_idx, 63 at most)"
        )
    if singular == plural:
        found.append(f"resource_plural {plural!r} must differ from resource")
    return found


def name_length_problems(table: str, fields: Iterable[str]) -> list[str]:
    """The fields whose names in PostgreSQL would pass its 63 bytes, one line each (empty: none).

    The longest is a marked field's index, <table>_<field>_id_idx (a unique field's constraint,
    <table>_<field>_key, is shorter); held for every field, since any can be marked later.
    """
    found = []
    for field in fields:
        index = f"{table}_{field}_id_idx"
        if len(index) > POSTGRES_NAME_BYTES:
            found.append(
                f"{field}: its index {index} would be {len(index)} characters and PostgreSQL "
                f"keeps {POSTGRES_NAME_BYTES}: shorten the field or resource_plural"
            )
    return found
