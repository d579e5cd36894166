"""What a resource is built from: the public face of the machinery below the resources.

A resource package (routes.py, repository.py, sql.py, schemas.py) imports from here, from its own
modules, and from FastAPI's and pydantic's public API; nothing else of the service, and no
framework internal (tests/test_architecture.py holds every resource to that). Behind this face,
fastapi_internals.py is the one module that reads FastAPI's private names.
"""

{% if cookiecutter.auth == "none" -%}
from fastapi import params

{% endif -%}
from ..db import Connection, Database, Record
from .answer_key import AnswerKey
{%- if cookiecutter.auth != "none" %}
from .auth import READ, WRITE
{%- endif %}
from .conditional import IfMatch, IfNoneMatch, etag, none_match, stale, versions_matching
from .cursor_keys import cursor_key
{%- if cookiecutter.jobs == "postgres" %}
from .events import enqueue_event, with_events
{%- endif %}
from .fields import (
    BigInt,
    Bool,
    Date,
    FieldType,
    Int,
    Money,
    OneOf,
    Str,
    Text,
    Timestamp,
    Unique,
    Uuid,
    field_type,
    is_unique,
)
from .idempotency import IdempotencyKey, create_once, idempotently
from .keyset import read_page
from .listing import Condition, Filterable, ListQuery, Sortable, list_query
from .models import Declared, Page, Stored, changes_of
from .numbers import INT64_MAX, INT64_MIN, JSON_EXACT_INTEGER
from .problems import RETRY_AFTER_SECONDS, ProblemError, problem, retry_shortly
from .resource import Resource
from .responses import JSONBytesResponse
from .routing import FastRoute, resource_router
from .rows import not_found, refusal, row_etag, row_response
from .state import DatabaseDep, SettingsDep
from .url_params import RowId
{%- if cookiecutter.auth == "none" %}

# What a read and a write need (auth=none: nothing). Every route declares one of them, so that a
# guard added here applies to every route of every resource.
READ: list[params.Depends] = []
WRITE: list[params.Depends] = []
{%- endif %}

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "JSON_EXACT_INTEGER",
    "READ",
    "RETRY_AFTER_SECONDS",
    "WRITE",
    "AnswerKey",
    "BigInt",
    "Bool",
    "Condition",
    "Connection",
    "Database",
    "DatabaseDep",
    "Date",
    "Declared",
    "FastRoute",
    "FieldType",
    "Filterable",
    "IdempotencyKey",
    "IfMatch",
    "IfNoneMatch",
    "Int",
    "JSONBytesResponse",
    "ListQuery",
    "Money",
    "OneOf",
    "Page",
    "ProblemError",
    "Record",
    "Resource",
    "RowId",
    "SettingsDep",
    "Sortable",
    "Stored",
    "Str",
    "Text",
    "Timestamp",
    "Unique",
    "Uuid",
    "changes_of",
    "create_once",
    "cursor_key",
{%- if cookiecutter.jobs == "postgres" %}
    "enqueue_event",
{%- endif %}
    "etag",
    "field_type",
    "idempotently",
    "is_unique",
    "list_query",
    "none_match",
    "not_found",
    "problem",
    "read_page",
    "refusal",
    "resource_router",
    "retry_shortly",
    "row_etag",
    "row_response",
    "stale",
    "versions_matching",
{%- if cookiecutter.jobs == "postgres" %}
    "with_events",
{%- endif %}
]
