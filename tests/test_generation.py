"""Bake named option sets the README's way (cookiecutter alone in its venv, neither uv nor ruff on
PATH: tests/option_sets.py) and hold each to what its user gets: every file rendered with its own
names, `make install`'s finish (the layout, the locks, openapi.json), its own `make lint`, its
compose file, its docs' commands for its own resource (its suite: test_generated_suites.py); and
every bad option set refused by the hook. Every combination of `auth` and `jobs` is one of them
(cookiecutter-django's named option sets); random ones are tests/test_generated_specs.py's."""

import contextlib
import hashlib
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from . import composing
from .baking import TEMPLATE, bake, load_dev_module, load_loadtest, tool_env
from .option_sets import OPTION_SETS, Baked, baked_variants
from .readme_way import make
from .serving import migrated_database, wait_until_answering

UNRENDERED = re.compile(r"\{\{\s*cookiecutter|\{%|cookiecutter\.")


variant = baked_variants(list(OPTION_SETS))


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
        # The generator's own templates (scaffold/templates/*.jinja) are Jinja by design; the
        # tools' caches, which `make install` and `make lint` write, are binary.
        if path.is_file()
        and path.suffix not in {".png", ".lock", ".jinja"}
        and not {".ruff_cache", ".mypy_cache"} & set(path.relative_to(project).parts)
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


def test_variant_passes_its_own_make_lint(variant: Baked) -> None:
    """ruff (check and format) and mypy --strict over the bake's Python, as `make lint` runs them:
    the generator's output laid out by `make install` where the bake had no ruff."""
    project, _ = variant
    assert not (project / ".layout-pending").exists()
    linted = make(project, "lint")
    assert linted.returncode == 0, linted.stdout[-5000:] + linted.stderr[-2000:]


def _shell(project: Path, auth: str, issuer: Any) -> dict[str, str]:
    """What the bake's compose header tells a user to set before `docker compose up`."""
    if auth == "api_key":
        return {"API_KEY_HASHES": hashlib.sha256(b"compose-key").hexdigest()}
    if auth == "jwt":
        return {name.upper(): str(value) for name, value in issuer.settings().items()}
    return {}


def _credentials(auth: str, issuer: Any, baked_plural: str) -> dict[str, str]:
    """A request's credentials: the key of _shell's digest, or a token with the read scope (named
    after the resource the bake was made with: JWT_READ_SCOPE's default)."""
    if auth == "api_key":
        return {"X-API-Key": "compose-key"}
    if auth == "jwt":
        return {"Authorization": f"Bearer {issuer.token(scope=f'{baked_plural}:read')}"}
    return {}


def _started(project: Path, command: list[str], env: dict[str, str], url: str) -> Any:
    argv = [sys.executable if command[0] == "python" else command[0], *command[1:]]
    process = subprocess.Popen(
        argv, cwd=project, env=tool_env(project, **env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_until_answering(process, url, what=" ".join(command), seconds=60)
    except RuntimeError:
        output, _ = process.communicate()
        raise AssertionError(f"{command} did not start: {output.decode()[-3000:]}") from None
    return process


def test_variant_compose_file_is_valid_and_its_services_start_with_the_settings_it_gives(
    variant: Baked, postgres_url: str
) -> None:
    """compose.yaml against the Compose Specification; with what the user must set unset, the
    run stops naming it (compose's `${NAME:?...}`); with it set, as its header says, the image's
    command starts with the environment compose gives the app and serves a resource; the worker
    (jobs=postgres) starts with the worker's."""
    project, context = variant
    auth, jobs = context.get("auth", "none"), context.get("jobs", "none")
    checked = composing.validate(project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    if auth != "none":
        with pytest.raises(composing.ComposeError, match=r"API_KEY_HASHES|JWT_ISSUER"):
            composing.services(project, {})
    wanted = tuple(int(part) for part in context.get("python_version", "3.11").split("."))
    if sys.version_info < wanted:
        pytest.skip(f"its services need Python {context['python_version']}; this is {sys.version}")
    baked_plural = context.get("resource_plural", "items")
    plural = context.get("resources", [baked_plural])[0]
    issuer_module = load_loadtest(project, "drive.issuer") if auth == "jwt" else None
    with (
        issuer_module.Issuer() if issuer_module else contextlib.nullcontext() as issuer,
        migrated_database(project, postgres_url, f"compose_{secrets.token_hex(4)}") as url,
    ):
        shell = _shell(project, auth, issuer)
        services = composing.services(project, shell)
        assert ("worker" in services) == (jobs == "postgres")
        free_port = load_dev_module(project, "devdb").free_port
        image_env, image_command = composing.image(project)
        for name in ("app", *(["worker"] if jobs == "postgres" else [])):
            service = services[name]
            port, metrics_port = free_port(), free_port()
            env = image_env | composing.environment(service, shell)
            env |= {"DATABASE_URL": url, "PORT": str(port), "METRICS_PORT": str(metrics_port)}
            command = service.get("command") or image_command
            probe = (
                f"http://127.0.0.1:{port}/readyz"
                if name == "app"
                else (f"http://127.0.0.1:{metrics_port}/metrics")
            )
            process = _started(project, command, env, probe)
            try:
                if name == "app":
                    headers = _credentials(auth, issuer, baked_plural)
                    answer = httpx.get(
                        f"http://127.0.0.1:{port}/{plural}", headers=headers, timeout=5
                    )
                    assert answer.status_code == 200, answer.text
            finally:
                process.terminate()
                process.communicate(timeout=40)


# In the commands of the docs: a scenario (`items.by_id`) and a path of the local server.
_SCENARIO = re.compile(r"\b([a-z][a-z0-9_]*)\.(?:by_id|page|create|patch|mixed|filtered|delete)\b")
_SERVED_PATH = re.compile(r"127\.0\.0\.1:\d+/([a-z][a-z0-9_]*)")
_CODE = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.DOTALL)
_COMMAND = re.compile(r"^\s*(?:\$ )?(?:make|curl|python|\.venv/bin/python)\b")
# Another bake's worked example, with the figures its commands printed there.
_EXAMPLES = {"profiling-example.md"}
_SERVED = {"healthz", "readyz", "docs", "redoc", "openapi", "metrics"}


def test_variant_docs_give_their_commands_for_its_own_resource(variant: Baked) -> None:
    """Every command of the guides and READMEs that names a scenario or a path of the service
    names the bake's resource, and the renaming recipe renames it to another name."""
    project, context = variant
    baked = context.get("resource_plural", "items")
    guides = [project / "README.md", project / "loadtest" / "README.md"]
    guides += [path for path in (project / "docs").glob("*.md") if path.name not in _EXAMPLES]
    wrong = []
    for guide in guides:
        text = guide.read_text()
        # The resources a guide adds in its own examples (`make resource NAME=order ...`).
        own = {baked} | {f"{name}s" for name in re.findall(r"\bNAME=(\w+)", text)}
        for block, span in _CODE.findall(text):
            for line in (block or span).splitlines():
                if not _COMMAND.match(line):
                    continue
                named = set(_SCENARIO.findall(line)) | set(_SERVED_PATH.findall(line)) - _SERVED
                wrong += [f"{guide.name}: {line.strip()}" for name in named - own]
    assert wrong == []
    recipe = (project / "docs" / "adding-a-resource.md").read_text()
    renames = re.findall(r"ALTER TABLE (\w+) RENAME TO (\w+)", recipe)
    assert renames
    assert all(old != new for old, new in renames), renames


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
        ({"resource_plural": "left"}, "resource_plural 'left' is an SQL key word"),
        (
            {"resource": "value", "resource_plural": "values"},
            "resource_plural 'values' names the table's row type",
        ),
        (
            {"fields": "name:str(20) " + "f" * 51 + ":int?"},
            f"fields: {'f' * 51}: its index items_{'f' * 51}_id_idx would be 64 characters",
        ),
        ({"fields": "name:str(20) price:float"}, "fields: price: unknown type 'float'"),
        ({"fields": "id:int"}, "fields: id: is a reserved word"),
        ({"fields": "qty:int(>=5)=1"}, "fields: qty: default 1 is outside its bounds"),
        # Specs the property test found to break a bake (tests/test_generated_specs.py).
        ({"fields": "copy:str(20)"}, "fields: copy: is a reserved word"),
        ({"fields": "due:date=8326-90-96"}, "fields: due: default '8326-90-96' is not a day"),
        (
            {"fields": "cents:money(>=171,<=36028797018963968)?"},
            "fields: cents: bound 36028797018963968 is beyond ±2**53",
        ),
        # Unique fields with fewer values than the rows the tests and the load test write.
        ({"fields": "code:str(1):unique"}, "fields: code: a one-character str has too few"),
        ({"fields": "rank:int(>=0,<=9):unique"}, "fields: rank: a unique int needs bounds"),
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
