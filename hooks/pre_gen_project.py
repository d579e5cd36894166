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
# The hook runs in the new project's (empty) folder; its parent, cookiecutter (or cruft, which
# calls cookiecutter's generator), runs hooks from the template folder. `_repo_dir` names that
# folder too where cookiecutter sets it (relative to where it was started, which PWD names).
_CANDIDATES = [
    Path(f"/proc/{os.getppid()}/cwd"),
    Path(os.environ.get("PWD", "."), "{{ cookiecutter.get('_repo_dir', '') }}"),
]
_FOLDER = "{{ '{{cookiecutter.project_slug}}' }}"
_GENERATOR = next(
    (path / _FOLDER for path in _CANDIDATES if (path / _FOLDER / "scaffold").is_dir()), None
)
if _GENERATOR is not None:
    sys.path.insert(0, str(_GENERATOR))
try:
    from scaffold.names import MODULES, SNAKE_CASE, name_length_problems, resource_name_problems
    from scaffold.spec import SpecError, parse
except ImportError:  # not found: the generator refuses a bad spec after the files are written
    _GENERATOR = None

SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def problems() -> list[str]:
    found = []
    if not SLUG_PATTERN.match(SLUG):
        found.append(
            f"project_slug {SLUG!r} is not a valid name: use lowercase letters, digits and "
            "single hyphens, starting with a letter (e.g. 'inventory-service')"
        )
    if _GENERATOR is None:
        print("The generator's rules were not found: the fields are checked as it runs.")
        return found
    if (
        not PACKAGE.isidentifier()
        or keyword.iskeyword(PACKAGE)
        or not SNAKE_CASE.fullmatch(PACKAGE)
    ):
        found.append(f"package_name {PACKAGE!r} is not a lowercase Python identifier")
    elif PACKAGE in MODULES or PACKAGE in sys.stdlib_module_names:
        found.append(f"package_name {PACKAGE!r} is a reserved word: it would shadow a module")
    if RESOURCE_PLURAL == PACKAGE:
        found.append(f"resource_plural {RESOURCE_PLURAL!r} must differ from package_name")
    found += resource_name_problems(RESOURCE, RESOURCE_PLURAL)
    try:
        fields = parse(FIELDS)
    except SpecError as error:
        found.append(f"fields: {error}")
    else:
        names = [field.name for field in fields]
        found += [f"fields: {line}" for line in name_length_problems(RESOURCE_PLURAL, names)]
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(f"ERROR: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
