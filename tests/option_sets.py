"""The named option sets the template bakes the README's way (cookiecutter-django's named option
sets): every combination of `auth` and `jobs`, each with names or fields of its own, some with
the specs users reported; baked, finished as `make install` finishes a bake, and, for some, taken
on as a user goes on (`make resource`, `make resource-remove`)."""

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .readme_way import bake_readme_way, finish, make

# A spec with every type of the grammar (scaffold/spec.py), for the first resource of a bake.
# A text, an int, an enum and a timestamp marked :filter:sort (the list's filters and sort orders,
# tested by the bake's own tests of its resource); the bool and the date filterable only.
EVERY_TYPE = (
    "sku:str(32):unique title:str(200) note:text?:filter:sort qty:int(>=0,<=1000)=0:filter:sort"
    " big:bigint(>=-5)? price_cents:money active:bool=true:filter"
    " kind:enum(retail|wholesale)=retail:filter:sort due:date?:filter"
    " paid_at:timestamp?:filter:sort ref:uuid?"
)
# A user's spec that turned a suite red: a unique first field and no integer field (the fast and
# standard handlers were compared by posting one string twice to the unique field).
PRODUCTS = (
    "sku:str(32):unique:filter title:str(200):sort status:enum(draft|live|gone)=draft:filter"
    " due:date?:sort note:text?"
)
# A short unique text field and no integer field: no room for a fresh value in a load test's
# create (its create scenario is left out rather than measure 409s).
SHORT_UNIQUE = "code:str(8):unique title:str(200) state:enum(open|closed)=open"
# What a user does next: two resources added with `make resource` (one with a unique field, one
# with an enum), then the bake's first resource removed with its table.
AFTER_BAKE = (
    ("resource", "NAME=order", "FIELDS=code:str(16):unique total_cents:money note:text?"),
    ("resource", "NAME=ticket", "FIELDS=title:str(120) state:enum(open|closed)=open due:date?"),
)
OPTION_SETS: dict[str, dict[str, str]] = {
    "default": {},
    "jobs": {"jobs": "postgres"},
    "api-key": {"auth": "api_key"},
    "api-key-jobs-products": {
        "auth": "api_key",
        "jobs": "postgres",
        "resource": "product",
        "resource_plural": "products",
        "fields": PRODUCTS,
    },
    "jwt-short-unique-field": {
        "auth": "jwt",
        "resource": "order_line",
        "resource_plural": "order_lines",
        "fields": SHORT_UNIQUE,
    },
    "jwt-jobs-custom-slug-package-every-type-then-resources": {
        "auth": "jwt",
        "jobs": "postgres",
        "project_name": "Acme Catalog",
        "project_slug": "acme-catalog-api",
        "package_name": "catalog",
        "resource": "product",
        "resource_plural": "products",
        "fields": EVERY_TYPE,
    },
    "line-items-py312": {
        "project_name": "Order Desk",
        "resource": "line_item",
        "resource_plural": "line_items",
        "python_version": "3.12",
        "description": "Line items of customer orders.",
        "author_name": "Ada Lovelace",
        "author_email": "ada@example.org",
    },
}
# The option sets that go on after the bake: AFTER_BAKE, then `make resource-remove` of the first.
THEN_RESOURCES = {"jwt-jobs-custom-slug-package-every-type-then-resources"}
Baked = tuple[Path, dict[str, Any]]


def bake_option_set(name: str, cookiecutter: Path, folder: Path) -> Baked:
    """The option set `name` baked the README's way into `folder`, then finished as `make install`
    finishes it; with the resources it ends with in its context."""
    context: dict[str, Any] = dict(OPTION_SETS[name])
    project = bake_readme_way(cookiecutter, folder, **context)
    wanted = tuple(int(part) for part in context.get("python_version", "3.11").split("."))
    if sys.version_info >= wanted:
        finish(project)
    else:
        # A bake for a newer Python than this one: its layout only (the lock and openapi.json
        # need that Python, which its `make install PYTHON=...` takes).
        laid_out = make(project, "fmt")
        assert laid_out.returncode == 0, laid_out.stdout[-3000:] + laid_out.stderr[-3000:]
        (project / ".layout-pending").unlink()
    if name in THEN_RESOURCES:
        first = context["resource_plural"]
        for step in (*AFTER_BAKE, ("resource-remove", f"PLURAL={first}")):
            done = make(project, *step)
            assert done.returncode == 0, f"make {step}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        context = {**context, "resources": ["orders", "tickets"], "removed": first}
    return project, context


def baked_variants(names: list[str]) -> Callable[..., Baked]:
    """A module's `variant` fixture: each named option set baked the README's way, once a module."""

    @pytest.fixture(scope="module", params=names, ids=names)
    def variant(
        request: pytest.FixtureRequest,
        readme_cookiecutter: Path,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Baked:
        return bake_option_set(
            request.param, readme_cookiecutter, tmp_path_factory.mktemp(request.param)
        )

    return variant
