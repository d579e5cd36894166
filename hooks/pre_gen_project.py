"""Refuse option sets that would bake a broken project, with one clear line each."""

import keyword
import os
import re
import sys
from pathlib import Path

SLUG = "{{ cookiecutter.project_slug }}"
PACKAGE = "{{ cookiecutter.package_name }}"
RESOURCE = "{{ cookiecutter.resource }}"
RESOURCE_PLURAL = "{{ cookiecutter.resource_plural }}"
FIELDS = """{{ cookiecutter.fields }}"""
# The generator's own rules for names and field specs (one home): the template's copy of it.
# A template given as a relative path (`cookiecutter .`) is relative to where cookiecutter was
# started, which the shell's PWD still names; the hook itself runs in the new project's folder.
_REPO = Path(os.environ.get("PWD", "."), "{{ cookiecutter._repo_dir }}")
sys.path.insert(0, str(_REPO / "{{ '{{cookiecutter.project_slug}}' }}"))

from scaffold.names import MODULES, SNAKE_CASE, resource_name_problems  # noqa: E402
from scaffold.spec import SpecError, parse  # noqa: E402

SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def problems() -> list[str]:
    found = []
    if not SLUG_PATTERN.match(SLUG):
        found.append(
            f"project_slug {SLUG!r} is not a valid name: use lowercase letters, digits and "
            "single hyphens, starting with a letter (e.g. 'inventory-service')"
        )
    if (
        not PACKAGE.isidentifier()
        or keyword.iskeyword(PACKAGE)
        or not SNAKE_CASE.fullmatch(PACKAGE)
    ):
        found.append(f"package_name {PACKAGE!r} is not a lowercase Python identifier")
    elif PACKAGE in MODULES or PACKAGE in sys.stdlib_module_names:
        found.append(f"package_name {PACKAGE!r} is a reserved word: it would shadow a module")
    found += resource_name_problems(RESOURCE, RESOURCE_PLURAL)
    if RESOURCE_PLURAL == PACKAGE:
        found.append(f"resource_plural {RESOURCE_PLURAL!r} must differ from package_name")
    try:
        parse(FIELDS)
    except SpecError as error:
        found.append(f"fields: {error}")
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(f"ERROR: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
