"""`python -m scaffold add NAME PLURAL --fields SPEC`, `python -m scaffold remove PLURAL` (both
rewrite openapi.json), `python -m scaffold openapi` (writes it from create_app()) and
`python -m scaffold template-update` (make template-update, scaffold/upkeep.py) and
`python -m scaffold lint-migrations` (squawk on each revision's SQL, scaffold/squawk.py),
`python -m scaffold revision MESSAGE` and `python -m scaffold field PLURAL SPEC` (a revision after
the resources' latest: blank, or adding a field to a resource in use; scaffold/revision.py)."""

import argparse
import sys
from pathlib import Path

from .generate import GenerateError, add_resource, remove_resource
from .openapi import refresh_document, write_document
from .spec import SpecError
from .upkeep import template_update


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scaffold", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the project folder")
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="generate a resource: every layer, its migration, tests")
    add.add_argument("name", help="the resource, singular snake_case (order)")
    add.add_argument("plural", nargs="?", help="its plural (default: NAME + s)")
    add.add_argument("--fields", required=True, help="the field spec (scaffold/spec.py)")
    remove = commands.add_parser("remove", help="remove a resource; its migration drops the table")
    remove.add_argument("plural", help="the resource's plural (items)")
    commands.add_parser("openapi", help="write openapi.json from the app's document")
    commands.add_parser(
        "template-update", help="take the template's changes; your resources are left alone"
    )
    lint_migrations = commands.add_parser("lint-migrations", help="squawk on each revision's SQL")
    lint_migrations.add_argument("--since", help="only the revisions added since this git revision")
    revision = commands.add_parser("revision", help="a blank revision after the resources' latest")
    revision.add_argument("message", help="what it does (add note to items)")
    field = commands.add_parser("field", help="add a field to a resource in use: revisions, line")
    field.add_argument("plural", help="the resource's plural (items)")
    field.add_argument("spec", help="one field of the spec (note:text(500)?:filter)")
    arguments = parser.parse_args(argv)
    # Imported where used: they need alembic, which the bake's hook (`add`, under cookiecutter's
    # own Python, the README's way) does not have; the commands that use them run in the venv.
    if arguments.command == "lint-migrations":
        from .squawk import lint

        return lint(arguments.root, arguments.since)
    if arguments.command in ("revision", "field"):
        from .revision import add_field, add_revision
    if arguments.command == "revision":
        try:
            print(add_revision(arguments.root, arguments.message))
        except GenerateError as error:
            print(f"ERROR: {error}", file=sys.stderr)
            return 2
        return 0
    if arguments.command == "template-update":
        return template_update(arguments.root)
    if arguments.command == "openapi":
        print(write_document(arguments.root))
        return 0
    try:
        if arguments.command == "field":
            written = add_field(arguments.root, arguments.plural, arguments.spec)
        elif arguments.command == "add":
            plural = arguments.plural or f"{arguments.name}s"
            written = add_resource(
                arguments.root,
                arguments.name,
                plural,
                arguments.fields,
            )
        else:
            written = remove_resource(arguments.root, arguments.plural)
    except (SpecError, GenerateError) as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    document = refresh_document(arguments.root)
    for path in [*written, *([document] if document else [])]:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
