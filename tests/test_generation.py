"""Bake named option sets; each must render fully, lint clean and pass its own suite."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .baking import PYTEST, TEMPLATE, VENV_BIN, bake, run

# A spec with every type of the grammar (scaffold/spec.py), for the first resource of a bake.
# A text, an int, an enum and a timestamp marked :filter:sort (issue 21's list of filters and sort
# orders, tested by the bake's own tests of its resource); the bool and the date filterable only.
EVERY_TYPE = (
    "sku:str(32):unique title:str(200) note:text?:filter:sort qty:int(>=0,<=1000)=0:filter:sort"
    " big:bigint(>=-5)? price_cents:money active:bool=true:filter"
    " kind:enum(retail|wholesale)=retail:filter:sort due:date?:filter"
    " paid_at:timestamp?:filter:sort ref:uuid?"
)
# What a user does next: two resources added with `make resource` (one with a unique field, one
# with an enum), then the bake's first resource removed with its table.
AFTER_BAKE = (
    ("resource", "NAME=order", "FIELDS=code:str(16):unique total_cents:money note:text?"),
    ("resource", "NAME=ticket", "FIELDS=title:str(120) state:enum(open|closed)=open due:date?"),
)
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "line-items-py312": {
        "project_name": "Order Desk",
        "resource": "line_item",
        "resource_plural": "line_items",
        "python_version": "3.12",
        "description": "Line items of customer orders.",
        "author_name": "Ada Lovelace",
        "author_email": "ada@example.org",
    },
    "custom-slug-package-every-type-then-resources": {
        "project_name": "Acme Catalog",
        "project_slug": "acme-catalog-api",
        "package_name": "catalog",
        "resource": "product",
        "resource_plural": "products",
        "fields": EVERY_TYPE,
    },
    "auth-api-key": {"auth": "api_key"},
    "auth-jwt-every-type-then-resources": {
        "auth": "jwt",
        "resource": "order_line",
        "resource_plural": "order_lines",
        "fields": EVERY_TYPE,
    },
}
# The variants that go on after the bake: AFTER_BAKE, then `make resource-remove` of the first.
THEN_RESOURCES = {
    "custom-slug-package-every-type-then-resources",
    "auth-jwt-every-type-then-resources",
}
UNRENDERED = re.compile(r"\{\{\s*cookiecutter|\{%|cookiecutter\.")


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def variant(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    context = VARIANTS[request.param]
    project = bake(tmp_path_factory.mktemp(request.param), **context)
    if request.param in THEN_RESOURCES:
        first = context["resource_plural"]
        for step in (*AFTER_BAKE, ("resource-remove", f"PLURAL={first}")):
            done = run(project, "make", *step, f"VENV={VENV_BIN.parent}")
            assert done.returncode == 0, f"make {step}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        context = {**context, "resources": ["orders", "tickets"], "removed": first}
    return project, context


def _resources(context: dict[str, Any]) -> list[str]:
    """The resource folders a variant ends with."""
    resources: list[str] = context.get("resources", [context.get("resource_plural", "items")])
    return resources


def _package(project: Path) -> str:
    (package,) = [path.name for path in (project / "src").iterdir() if path.is_dir()]
    return package


def test_variant_leaves_no_template_marker(variant: tuple[Path, dict[str, Any]]) -> None:
    project, _ = variant
    leftovers = [
        f"{path.relative_to(project)}: {line.strip()}"
        for path in project.rglob("*")
        # The generator's own templates (scaffold/templates/*.jinja) are Jinja by design.
        if path.is_file() and path.suffix not in {".png", ".lock", ".jinja"}
        for line in path.read_text(errors="replace").splitlines()
        if UNRENDERED.search(line) and "{{" not in line.replace("{{ cookiecutter", "")
    ]
    leftovers += [str(path) for path in project.rglob("*{{*")]
    assert leftovers == []


def test_variant_uses_its_names(variant: tuple[Path, dict[str, Any]]) -> None:
    project, context = variant
    plural = context.get("resource_plural", "items")
    package = context.get("package_name", _package(project))
    for resource in _resources(context):
        assert (project / "src" / package / resource / "routes.py").is_file()
    assert (project / "src" / package / plural).is_dir() == ("removed" not in context)
    pyproject = (project / "pyproject.toml").read_text()
    assert f'requires-python = ">={context.get("python_version", "3.11")}"' in pyproject
    assert context.get("description", "tuned for a 1-core pod") in pyproject
    assert context.get("author_email", "jane@example.com") in pyproject
    migration = next((project / "migrations" / "versions").glob("0001_*.py")).read_text()
    assert f"CREATE TABLE {plural} (" in migration


def test_variant_writes_its_resource_with_the_right_article(
    variant: tuple[Path, dict[str, Any]],
) -> None:
    project, context = variant
    resource = context.get("resource", "item").replace("_", " ")
    wrong = "a" if resource[0] in "aeio" else "an"
    found = [
        f"{path.relative_to(project)}: {line.strip()}"
        for path in project.rglob("*")
        if path.is_file() and path.suffix in {".py", ".md"}
        for line in path.read_text().splitlines()
        if re.search(rf"\b{wrong} {context.get('resource', 'item')}\b", line, re.IGNORECASE)
    ]
    assert found == []


def test_variant_carries_only_the_auth_modules_of_its_option(
    variant: tuple[Path, dict[str, Any]],
) -> None:
    project, context = variant
    package = project / "src" / context.get("package_name", _package(project))
    modules = {"none": set(), "api_key": {"auth.py"}, "jwt": {"auth.py", "jwks.py"}}[
        context.get("auth", "none")
    ]
    assert {path.name for path in package.rglob("*.py")} & {"auth.py", "jwks.py"} == modules
    assert {path.name for path in (package / "kit").glob("*.py")} >= modules
    tests = {path.name for path in (project / "tests").rglob("*.py")}
    assert ("test_auth.py" in tests) == bool(modules)
    # Every route declares what it needs; READ and WRITE guard them in an auth bake (kit/auth.py).
    for resource in _resources(context):
        assert (package / resource / "routes.py").read_text().count("dependencies=") == 5
    face = (package / "kit" / "__init__.py").read_text()
    assert ("from .auth import READ, WRITE" in face) == bool(modules)


def test_variant_passes_ruff(variant: tuple[Path, dict[str, Any]]) -> None:
    project, _ = variant
    check = run(project, "ruff", "check", ".")
    assert check.returncode == 0, check.stdout
    layout = run(project, "ruff", "format", "--check", ".")
    assert layout.returncode == 0, layout.stdout


@pytest.mark.parametrize("auth", ["none", "api_key", "jwt"])
def test_a_bake_without_ruff_on_path_is_already_laid_out_as_ruff_would(
    auth: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The post-generation hook formats with ruff when it finds it; without it, the template's
    own layout must already be ruff's for the default names, in every auth option."""
    folders = os.environ["PATH"].split(os.pathsep)
    monkeypatch.setenv("PATH", os.pathsep.join(f for f in folders if not Path(f, "ruff").exists()))
    assert shutil.which("ruff") is None
    project = bake(tmp_path, auth=auth)
    check = run(project, "ruff", "check", "--no-cache", ".")
    assert check.returncode == 0, check.stdout
    layout = run(project, "ruff", "format", "--check", "--no-cache", ".")
    assert layout.returncode == 0, layout.stdout


# Every first resource the template's tests bake: each variant's, each of AFTER_BAKE's as a first
# resource, and issue 42's (a unique field, whose conflict texts grow with the names).
LAID_OUT = {
    **{name: context for name, context in VARIANTS.items() if "fields" in context},
    **{
        step[1].removeprefix("NAME="): {
            "resource": step[1].removeprefix("NAME="),
            "resource_plural": step[1].removeprefix("NAME=") + "s",
            "fields": step[2].removeprefix("FIELDS="),
        }
        for step in AFTER_BAKE
    },
    "order-unique-enum-sort-filter": {
        "resource": "order",
        "resource_plural": "orders",
        "fields": "sku:str(32):unique total:money:sort"
        " kind:enum(retail|wholesale)=retail:filter due:date?:filter",
    },
}


@pytest.mark.parametrize("name", list(LAID_OUT))
def test_every_field_spec_bakes_as_ruff_lays_it_out_without_ruff_on_path(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ruff on PATH the hook formats nothing: the generator's own output must already be
    what the bake's `make lint` (ruff check, ruff format --check) accepts, for every spec."""
    folders = os.environ["PATH"].split(os.pathsep)
    monkeypatch.setenv("PATH", os.pathsep.join(f for f in folders if not Path(f, "ruff").exists()))
    assert shutil.which("ruff") is None
    project = bake(tmp_path, **LAID_OUT[name])
    check = run(project, "ruff", "check", "--no-cache", ".")
    assert check.returncode == 0, check.stdout
    layout = run(project, "ruff", "format", "--check", "--no-cache", ".")
    assert layout.returncode == 0, layout.stdout


def test_variant_passes_mypy_strict(variant: tuple[Path, dict[str, Any]]) -> None:
    project, _ = variant
    result = run(project, "mypy", "src", "tests")
    assert result.returncode == 0, result.stdout


def test_variant_passes_its_own_suite_on_postgres(
    variant: tuple[Path, dict[str, Any]], postgres_url: str
) -> None:
    project, context = variant
    wanted = tuple(int(part) for part in context.get("python_version", "3.11").split("."))
    if sys.version_info < wanted:
        # A 3.12 bake uses 3.12 syntax (PEP 695 generics, as ruff's pyupgrade asks): only its
        # lint and mypy (with its python_version) run on an older interpreter.
        pytest.skip(f"the bake needs Python {context['python_version']}; this is {sys.version}")
    if context is VARIANTS["auth-api-key"]:
        pytest.skip("its suite runs in test_locked_bake_installs_and_tests_with_its_own_makefile")
    result = run(project, *PYTEST, DATABASE_URL=postgres_url)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def test_locked_bake_installs_and_tests_with_its_own_makefile(
    tmp_path: Path, postgres_url: str
) -> None:
    """The user's path: bake with uv.lock, `make install`, `make lint`, `make test`; with
    auth=api_key, whose suite runs here rather than a second time among the variants."""
    project = bake(tmp_path, lock_dependencies="yes", auth="api_key")
    assert (project / "uv.lock").is_file()
    for target in ("install", "lint", "test"):
        result = run(project, "make", target, DATABASE_URL=postgres_url, PYTHONPATH="")
        assert result.returncode == 0, (
            f"make {target}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"project_slug": "Bad Slug"}, "project_slug 'Bad Slug' is not a valid name"),
        ({"project_slug": "ok-slug", "package_name": "1package"}, "package_name '1package' is not"),
        ({"project_slug": "ok-slug", "package_name": "class"}, "package_name 'class' is not"),
        ({"project_slug": "json"}, "package_name 'json' is a reserved word"),
        ({"resource": "LineItem"}, "resource 'LineItem' is not snake_case"),
        ({"resource": "kit", "resource_plural": "kits"}, "resource 'kit' is a reserved word"),
        ({"resource_plural": "select"}, "resource_plural 'select' is an SQL key word"),
        ({"fields": "name:str(20) price:float"}, "fields: price: unknown type 'float'"),
        ({"fields": "id:int"}, "fields: id: is a reserved word"),
        ({"fields": "qty:int(>=5)=1"}, "fields: qty: default 1 is outside its bounds"),
        ({"resource": "item", "resource_plural": "item"}, "must differ from resource"),
        ({"python_version": "3.9"}, "3.9 provided for choice variable python_version"),
    ],
    ids=lambda value: str(value)[:40],
)
def test_hook_refuses_bad_options_with_a_clear_message(
    tmp_path: Path, context: dict[str, str], message: str
) -> None:
    options = [f"{key}={value}" for key, value in context.items()]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cookiecutter",
            str(TEMPLATE),
            "--no-input",
            "-o",
            str(tmp_path),
            *options,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("resource", "article"),
    [("item", "an"), ("widget", "a"), ("upload", "an"), ("unit", "a")],
)
def test_operation_summaries_take_the_article_of_the_resource_name(
    tmp_path: Path, resource: str, article: str
) -> None:
    project = bake(tmp_path, resource=resource, resource_plural=f"{resource}s")
    routes = next(project.glob(f"src/*/{resource}s/routes.py")).read_text()
    assert f'summary="Create {article} {resource}"' in routes
    assert f'summary="Delete {article} {resource}"' in routes
