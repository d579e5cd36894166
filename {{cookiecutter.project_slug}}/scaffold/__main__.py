"""`python -m scaffold add NAME PLURAL --fields SPEC`, `python -m scaffold remove PLURAL` (both
rewrite openapi.json) and `python -m scaffold openapi` (writes it from create_app())."""

import argparse
import sys
from pathlib import Path

from .generate import GenerateError, add_resource, remove_resource
from .openapi import refresh_document, write_document
from .spec import SpecError


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
    arguments = parser.parse_args(argv)
    if arguments.command == "openapi":
        print(write_document(arguments.root))
        return 0
    try:
        if arguments.command == "add":
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
