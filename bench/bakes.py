"""A baked project's modules, found by what they define and imported without touching sys.path
for good: the bench runs against any bake, whatever its package is called (`--project`)."""

import re
from pathlib import Path
from typing import Any

from tests.baking import load_module


def package_of(project: Path) -> str:
    """The bake's package: the one folder under src/ holding an __init__.py."""
    found = sorted(init.parent.name for init in (project / "src").glob("*/__init__.py"))
    if len(found) != 1:
        raise SystemExit(f"{project}: expected one package under src/, found {found or 'none'}")
    return found[0]


def module_defining(project: Path, package: str, name: str) -> str:
    """The module of `package` (dotted, below the package) that defines `name` at its top level:
    a function, a class or a constant."""
    root = project / "src" / package
    definition = re.compile(rf"^(?:(?:async def|def|class) {name}\b|{name}\s*[:=])", re.MULTILINE)
    for path in sorted(root.rglob("*.py")):
        if definition.search(path.read_text()):
            return ".".join(path.relative_to(root).with_suffix("").parts)
    raise SystemExit(f"{root}: no module defines {name}")


def load_defining(project: Path, name: str) -> Any:
    """The bake's module that defines `name` (a class or function), imported."""
    package = package_of(project)
    return load_module(project, package, module_defining(project, package, name))
