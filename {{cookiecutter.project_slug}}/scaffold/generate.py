"""Render a resource into a project, or take one out: files, migration, registration, README."""

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import jinja2

from .names import name_length_problems, resource_name_problems
from .spec import Field, parse
from .upkeep import skip_resource, unskip_resource

TEMPLATES = Path(__file__).parent / "templates"
# What is rendered where: template -> path in the project ({package}, {plural} filled in).
FILES = {
    "resource/__init__.py.jinja": "src/{package}/{plural}/__init__.py",
    "resource/schemas.py.jinja": "src/{package}/{plural}/schemas.py",
    "resource/sql.py.jinja": "src/{package}/{plural}/sql.py",
    "resource/repository.py.jinja": "src/{package}/{plural}/repository.py",
    "resource/routes.py.jinja": "src/{package}/{plural}/routes.py",
    "tests/__init__.py.jinja": "tests/{plural}/__init__.py",
    "tests/test_routes.py.jinja": "tests/{plural}/test_routes.py",
    "tests/test_schemas.py.jinja": "tests/{plural}/test_schemas.py",
    "tests/test_repository.py.jinja": "tests/{plural}/test_repository.py",
    "tests/test_listing.py.jinja": "tests/{plural}/test_listing.py",
    "tests/test_listing_refusals.py.jinja": "tests/{plural}/test_listing_refusals.py",
    "tests/test_client.py.jinja": "tests/{plural}/test_client.py",
    "clients/check.ts.jinja": "clients/check/{plural}.ts",
}
RESOURCES_MODULE = "src/{package}/serving/resources.py"
EVENTS_MODULE = "events.py"
AUTH_MODULE = "auth.py"
VERSIONS = Path("migrations/versions")
README_END = "<!-- resources:end -->"
# As this generator writes them ("0002") and as `alembic revision` does ('1a2b3c4d5e6f').
_REVISION = re.compile(r"""^revision(?::[^=]+)? = ['"]([^'"]+)['"]""", re.MULTILINE)
_DOWN_REVISION = re.compile(r"""^down_revision(?::[^=]+)? = ['"]([^'"]+)['"]""", re.MULTILINE)


class GenerateError(RuntimeError):
    """The project cannot take the change; the message says why."""


@dataclass(frozen=True)
class Names:
    """How a resource is called in code and prose."""

    singular: str
    plural: str
    fields: tuple[Field, ...] = ()

    @property
    def cls(self) -> str:
        return "".join(part.title() for part in self.singular.split("_"))

    @property
    def article(self) -> str:
        word = self.singular
        vowel_sound = word[0] in "aeio" or (word[0] == "u" and word[2:3] not in "aeiou")
        return "an" if vowel_sound else "a"

    @property
    def unique_fields(self) -> list[str]:
        return [field.name for field in self.fields if field.unique]


def package_of(root: Path) -> str:
    packages = [path.parent.name for path in (root / "src").glob("*/__init__.py")]
    if len(packages) != 1:
        raise GenerateError(f"expected one package under {root / 'src'}, found {packages}")
    return packages[0]


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # noqa: S701  # Python, SQL and Markdown, never HTML
    )


def _migrations(root: Path) -> dict[str, str | None]:
    """Each revision of migrations/versions and the one it follows."""
    found: dict[str, str | None] = {}
    for path in sorted((root / VERSIONS).glob("*.py")):
        text = path.read_text()
        revision = _REVISION.search(text)
        if revision is not None:
            down = _DOWN_REVISION.search(text)
            found[revision.group(1)] = down.group(1) if down else None
    return found


def next_revision(root: Path) -> tuple[str, str | None]:
    """(the new revision, the head it follows)."""
    migrations = _migrations(root)
    heads = set(migrations) - {down for down in migrations.values() if down}
    if len(heads) > 1:
        raise GenerateError(f"migrations have several heads {sorted(heads)}: merge them first")
    numbered = [revision for revision in migrations if revision.isdigit()]
    width = max((len(revision) for revision in numbered), default=4)
    number = max((int(revision) for revision in numbered), default=0) + 1
    return f"{number:0{width}d}", next(iter(heads), None)


def _write_migration(root: Path, template: str, names: Names, action: str) -> Path:
    revision, down = next_revision(root)
    text = (
        environment()
        .get_template(template)
        .render(r=names, fields=names.fields, revision=revision, down_revision=down)
    )
    path = root / VERSIONS / f"{revision}_{action}_{names.plural}.py"
    path.write_text(text)
    return path


def _register(root: Path, package: str, plural: str) -> Path:
    path = root / RESOURCES_MODULE.format(package=package)
    lines = path.read_text().splitlines(keepends=True)
    # The package's own imports are one sorted block (as ruff keeps it): the new one joins it.
    block = [i for i, line in enumerate(lines) if line.startswith("from ..")]
    imports = sorted([*(lines[i] for i in block), f"from ..{plural} import RESOURCE as {plural}\n"])
    lines[block[0] : block[-1] + 1] = imports
    start = next(i for i, line in enumerate(lines) if line.startswith("RESOURCES"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("]"))
    lines.insert(end, f"    {plural},\n")
    path.write_text("".join(lines))
    return path


def _registered(root: Path, package: str) -> list[str]:
    """The resources listed in RESOURCES of serving/resources.py, in order."""
    lines = (root / RESOURCES_MODULE.format(package=package)).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RESOURCES"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("]"))
    return [line.strip().rstrip(",") for line in lines[start + 1 : end] if line.strip()]


def _unregister(root: Path, package: str, plural: str) -> Path:
    path = root / RESOURCES_MODULE.format(package=package)
    dropped = {f"from ..{plural} import RESOURCE as {plural}", f"{plural},"}
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(line for line in lines if line.strip() not in dropped))
    return path


def _readme_section(plural: str) -> tuple[str, str]:
    return f"<!-- resource:{plural} -->", f"<!-- /resource:{plural} -->"


def _add_to_readme(root: Path, names: Names) -> Path:
    path = root / "README.md"
    text = path.read_text()
    if README_END not in text:
        raise GenerateError(f"README.md has no {README_END} line to add the resource before")
    section = (
        environment()
        .get_template("readme.md.jinja")
        .render(r=names, fields=names.fields, package=package_of(root))
    )
    path.write_text(text.replace(README_END, section + README_END, 1))
    return path


def _remove_from_readme(root: Path, plural: str) -> Path:
    path = root / "README.md"
    start, end = _readme_section(plural)
    text = path.read_text()
    if start in text and end in text:
        before, _, rest = text.partition(start)
        _, _, after = rest.partition(end + "\n")
        path.write_text(before + after)
    return path


def add_resource(root: Path, singular: str, plural: str, spec: str) -> list[Path]:
    """Render the resource `plural` with the fields of `spec`; returns the files written."""
    problems = resource_name_problems(singular, plural)
    if problems:
        raise GenerateError("; ".join(problems))
    package = package_of(root)
    if plural == package:
        raise GenerateError(f"resource_plural {plural!r} must differ from the package name")
    if (root / "src" / package / plural).exists():
        raise GenerateError(f"src/{package}/{plural} exists already")
    names = Names(singular, plural, tuple(parse(spec)))
    problems = name_length_problems(plural, [field.name for field in names.fields])
    if problems:
        raise GenerateError("; ".join(problems))
    # jobs=postgres: each create enqueues its `created` event in its transaction (the jobs guide).
    jobs = (root / "src" / package / "kit" / EVENTS_MODULE).is_file()
    # auth=api_key or jwt: the generated client's calls then take an authenticated client.
    auth = (root / "src" / package / "kit" / AUTH_MODULE).is_file()
    templates = environment()
    kit_names = sorted(
        {"Declared", "Page", "Stored", "changes_of", "list_query"}.union(
            *(f.kit_names for f in names.fields)
        )
    )
    written = []
    for template, target in FILES.items():
        path = root / target.format(package=package, plural=plural)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = templates.get_template(template).render(
            r=names,
            fields=names.fields,
            package=package,
            kit_names=kit_names,
            jobs=jobs,
            auth=auth,
        )
        path.write_text(text)
        written.append(path)
    written.append(_write_migration(root, "migration_create.py.jinja", names, "create"))
    written.append(_register(root, package, plural))
    written.append(_add_to_readme(root, names))
    skipped = skip_resource(root, package, plural)  # yours: template updates leave it alone
    return written if skipped is None else [*written, skipped]


def remove_resource(root: Path, plural: str) -> list[Path]:
    """Take the resource `plural` out; a new migration drops its table."""
    package = package_of(root)
    folder = root / "src" / package / plural
    if not (folder / "routes.py").is_file():
        raise GenerateError(f"no resource {plural!r}: src/{package}/{plural}/routes.py is missing")
    if _registered(root, package) == [plural]:
        # The service, its tests and the load test need one resource at least: refused before
        # anything is touched (docs/adding-a-resource.md, "Removing a resource").
        raise GenerateError(
            f"{plural} is the last resource: add the one that replaces it first (make resource)"
        )
    shutil.rmtree(folder)
    shutil.rmtree(root / "tests" / plural, ignore_errors=True)
    (root / "clients" / "check" / f"{plural}.ts").unlink(missing_ok=True)
    names = Names(plural.removesuffix("s") or plural, plural)
    written = [
        folder,
        _write_migration(root, "migration_drop.py.jinja", names, "drop"),
        _unregister(root, package, plural),
        _remove_from_readme(root, plural),
    ]
    unskipped = unskip_resource(root, package, plural)
    return written if unskipped is None else [*written, unskipped]
