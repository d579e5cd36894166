"""Revisions of the resources' branch: a blank one (`make revision`) and a field added to a resource
in use (`make field`), each numbered after the branch's latest and chained to it, whatever the
machinery's branch holds (`alembic upgrade heads` applies both).

A field added to a table that has rows is two revisions, each safe to run under traffic and to run
again after a failure (docs/changing-the-schema.md):

1. `ADD COLUMN` without its CHECK, then the CHECK `NOT VALID`: the `ACCESS EXCLUSIVE` lock both
   take lasts milliseconds, since neither reads the table;
2. `VALIDATE CONSTRAINT` (a scan that blocks no write), then the index of a `:filter`/`:sort` or
   `:unique` field `CONCURRENTLY`, outside the transaction. A build that failed before (a lock
   timeout, duplicates) left an invalid index behind: it is dropped first, so the revision can be
   run again.
"""

import re
from pathlib import Path

from alembic import command
from alembic.config import Config

from .generate import VERSIONS, GenerateError, environment, next_revision, package_of
from .names import name_length_problems
from .spec import Field, parse_field

_FIELDS_CLASS = re.compile(r"^class (\w+)Fields\(Declared\):\n", re.MULTILINE)
_KIT_IMPORT = re.compile(r"^from \.\.kit import \(\n((?:    \w+,\n)*)\)", re.MULTILINE)
_PYTHON_IMPORTS = {
    "date": "from datetime import date\n",
    "datetime": "from datetime import datetime\n",
    "UUID": "from uuid import UUID\n",
}


def _slug(message: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_")[:40]


def add_revision(root: Path, message: str) -> Path:
    """A blank revision (migrations/script.py.mako) after the resources' latest."""
    revision, down = next_revision(root)
    config = Config(str(root / "alembic.ini"))
    script = command.revision(
        config,
        message=message,
        head=down or "base",
        rev_id=revision,
        version_path=str(root / VERSIONS),
    )
    if script is None or isinstance(script, list):  # one head given: one script written
        raise GenerateError(f"alembic wrote no single revision after {down}")
    return Path(script.path)


def _render(root: Path, template: str, name: str, **context: object) -> Path:
    revision, down = next_revision(root)
    text = (
        environment()
        .get_template(template)
        .render(revision=revision, down_revision=down, **context)
    )
    path = root / VERSIONS / f"{revision}_{name}.py"
    path.write_text(text)
    return path


def _declare(path: Path, field: Field) -> None:
    """The field's line at the end of the declaration in schemas.py, with what it imports."""
    text = path.read_text()
    found = _FIELDS_CLASS.search(text)
    if found is None:
        raise GenerateError(f"{path}: no `class ...Fields(Declared):` to add {field.name} to")
    end = text.find("\n\n\n", found.end())
    default = "" if field.python_default is None else f" = {field.python_default}"
    line = f"\n    {field.name}: {field.annotation}{default}"
    text = text[:end] + line + text[end:]
    kit = _KIT_IMPORT.search(text)
    if kit is None:
        raise GenerateError(f"{path}: no `from ..kit import (...)` block")
    names = {name.strip().rstrip(",") for name in kit.group(1).splitlines()} | field.kit_names
    block = "".join(f"    {name},\n" for name in sorted(names))
    text = text[: kit.start(1)] + block + text[kit.end(1) :]
    needed = [_PYTHON_IMPORTS[kind] for kind in (field.python_type,) if kind in _PYTHON_IMPORTS]
    if field.type == "enum" and "Literal" not in text.partition("class ")[0]:
        text = text.replace("from typing import Annotated", "from typing import Annotated, Literal")
    for statement in needed:
        if statement not in text:  # ruff's isort (make field runs it) puts it in its place
            text = text.replace("from typing import", statement + "from typing import", 1)
    path.write_text(text)


def add_field(root: Path, plural: str, spec: str) -> list[Path]:
    """The revisions that add the field of `spec` to the table of `plural`, and its line."""
    field = parse_field(spec)
    if field.required:
        raise GenerateError(
            f"{field.name}: a required field cannot be added to a table with rows in one step; "
            f"add it optional ({spec.split(':')[0]}:{spec.split(':')[1]}?) or with a default, "
            "backfill it, then make it required (docs/changing-the-schema.md)"
        )
    schemas = root / "src" / package_of(root) / plural / "schemas.py"
    if not schemas.is_file():
        raise GenerateError(f"no resource {plural!r}: {schemas.relative_to(root)} is missing")
    if re.search(rf"^    {field.name}:", schemas.read_text(), re.MULTILINE):
        raise GenerateError(f"{field.name}: {plural} declares it already")
    problems = name_length_problems(plural, [field.name])
    if problems:
        raise GenerateError("; ".join(problems))
    context = {"table": plural, "field": field, "check": " AND ".join(field.checks)}
    added = f"add_{field.name}_to_{plural}"
    written = [_render(root, "migration_add_field.py.jinja", added, **context)]
    if field.checks or field.indexed or field.unique:
        name = f"validate_and_index_{field.name}_of_{plural}"
        written.append(_render(root, "migration_index_field.py.jinja", name, **context))
    _declare(schemas, field)
    return [*written, schemas]
