"""Hostile methods, paths and query strings, one table: ids and paging numbers in any spelling but
canonical decimal, methods no route takes, trailing slashes with a forged Host. Each gets a 4xx
problem+json naming the problem, and none changes the table."""

import httpx
import pytest

from ..conftest import BASE, ID_FIELD
from ..declared import first_resource
from .hostile import Hostile, assert_refused_and_unchanged, get, json_change, json_with

TABLE = first_resource().table

HOSTILE = {
    # Methods no route takes: 405 with Allow (checked below).
    "put-row": Hostile("PUT", BASE + "/{id}", 405, json_with(), detail_says="Method Not Allowed"),
    "put-collection": Hostile("PUT", BASE, 405, json_with(), detail_says="Method Not Allowed"),
    "post-to-row": Hostile(
        "POST", BASE + "/{id}", 405, json_with(), detail_says="Method Not Allowed"
    ),
    "delete-collection": Hostile("DELETE", BASE, 405, headers={}, detail_says="Method Not Allowed"),
    "patch-collection": Hostile(
        "PATCH", BASE, 405, json_change(), detail_says="Method Not Allowed"
    ),
    "trace-row": Hostile(
        "TRACE", BASE + "/{id}", 405, headers={}, detail_says="Method Not Allowed"
    ),
    # No redirect built from the Host header: a trailing slash is simply not a route.
    "trailing-slash-evil-host": Hostile(
        "GET", BASE + "/{id}/", 404, headers={"host": "evil.example"}, detail_says="Not Found"
    ),
    "collection-trailing-slash-evil-host": Hostile(
        "GET", BASE + "/", 404, headers={"host": "evil.example"}, detail_says="Not Found"
    ),
    # An encoded slash is not another spelling of a row's URL: a proxy rule on /items/*
    # would not see it.
    "encoded-slash": Hostile("GET", BASE + "%2F{id}", 404, headers={}, detail_says="Not Found"),
    "delete-encoded-slash-lower-case": Hostile(
        "DELETE", BASE + "%2f{id}", 404, headers={}, detail_says="Not Found"
    ),
    "patch-encoded-slash": Hostile(
        "PATCH", BASE + "%2F{id}", 404, json_change(), detail_says="Not Found"
    ),
    # Ids in the path.
    "id-negative": get(BASE + "/-1", names_field=ID_FIELD),
    "id-zero": get(BASE + "/0", names_field=ID_FIELD),
    "id-not-numeric": get(BASE + "/abc", names_field=ID_FIELD),
    "id-float": get(BASE + "/1.5", names_field=ID_FIELD),
    "id-above-int64": get(BASE + "/9223372036854775808", names_field=ID_FIELD),
    "id-sql-injection": get(BASE + "/1%20OR%201=1", names_field=ID_FIELD),
    "delete-id-not-numeric": Hostile(
        "DELETE", BASE + "/abc", 422, headers={}, names_field=ID_FIELD
    ),
    "patch-id-negative": Hostile("PATCH", BASE + "/-3", 422, json_change(), names_field=ID_FIELD),
    # One resource, one URL: only canonical ASCII decimal ids (the row exists as /{id}).
    "id-with-fraction": get(BASE + "/{id}.0", names_field=ID_FIELD),
    "id-with-plus": get(BASE + "/+{id}", names_field=ID_FIELD),
    "id-with-leading-space": get(BASE + "/%20{id}", names_field=ID_FIELD),
    "id-with-trailing-space": get(BASE + "/{id}%20", names_field=ID_FIELD),
    "id-with-tab": get(BASE + "/{id}%09", names_field=ID_FIELD),
    "id-with-underscore": get(BASE + "/{id}_0", names_field=ID_FIELD),
    "id-with-leading-zero": get(BASE + "/0{id}", names_field=ID_FIELD),
    "id-arabic-indic-digit": get(BASE + "/%D9%A1", names_field=ID_FIELD),
    "id-fullwidth-digit": get(BASE + "/%EF%BC%91", names_field=ID_FIELD),
    "id-exponent": get(BASE + "/1e1", names_field=ID_FIELD),
    "id-hex": get(BASE + "/0x1", names_field=ID_FIELD),
    "patch-id-with-plus": Hostile(
        "PATCH", BASE + "/+{id}", 422, json_change(), names_field=ID_FIELD
    ),
    "delete-id-with-fraction": Hostile(
        "DELETE", BASE + "/{id}.0", 422, headers={}, names_field=ID_FIELD
    ),
    "delete-id-with-underscore": Hostile(
        "DELETE", BASE + "/{id}_0", 422, headers={}, names_field=ID_FIELD
    ),
    # Paging.
    "limit-zero": get(BASE + "?limit=0", names_field="limit"),
    "limit-above-max": get(BASE + "?limit=501", names_field="limit"),
    "limit-not-numeric": get(BASE + "?limit=ten", names_field="limit"),
    "limit-float": get(BASE + "?limit=1e3", names_field="limit"),
    "after-negative": get(BASE + "?after=-1", names_field="after"),
    "after-above-int64": get(BASE + "?after=99999999999999999999", names_field="after"),
    "after-sql-injection": get(BASE + f"?after=0;DROP%20TABLE%20{TABLE}", names_field="after"),
    "limit-with-underscore": get(BASE + "?limit=1_0", names_field="limit"),
    "limit-with-plus": get(BASE + "?limit=%2B5", names_field="limit"),
    "limit-with-leading-zero": get(BASE + "?limit=05", names_field="limit"),
    "limit-with-space": get(BASE + "?limit=%205", names_field="limit"),
    "limit-integral-fraction": get(BASE + "?limit=10.0", names_field="limit"),
    "limit-empty": get(BASE + "?limit=", names_field="limit"),
    "after-with-underscore": get(BASE + "?after=1_0", names_field="after"),
    "after-minus-zero": get(BASE + "?after=-0", names_field="after"),
    "after-padded-zeros": get(BASE + "?after=00", names_field="after"),
    "after-fullwidth-digit": get(BASE + "?after=%EF%BC%91", names_field="after"),
}


@pytest.mark.parametrize("case", list(HOSTILE.values()), ids=list(HOSTILE))
async def test_a_hostile_url_gets_a_4xx_problem_naming_it_and_changes_nothing(
    client: httpx.AsyncClient, database_url: str, existing_id: int, case: Hostile
) -> None:
    await assert_refused_and_unchanged(client, database_url, existing_id, case)
