"""The floors of the package: each folder tells what a file may import.

From the bottom: the settings; observability; the database pool; the kit (what a resource is
built from); the resources (one package each, the probes included); serving (what assembles and
serves them){% if cookiecutter.jobs == "postgres" %} and the worker (what runs the jobs){% endif %}, and the migration command; `__main__`. A file imports only from its own floor or below. A resource imports
only the kit's public face (`kit/__init__.py`), its own modules, and FastAPI's and pydantic's
public API: no framework internal, no asyncpg, no `app.state`.
"""

import ast
import importlib
from pathlib import Path

import pytest

import {{ cookiecutter.package_name }}

PACKAGE = Path({{ cookiecutter.package_name }}.__file__).parent
NAME = PACKAGE.name
FLOORS = [
    {"settings", "settings_sources"},
    {"observability"},
    {"db", "asyncpg_internals", "query_spans"},
    {"kit"},
    None,  # the resources: every other subpackage
    {"serving", "migrate"{% if cookiecutter.jobs == "postgres" %}, "worker"{% endif %}},
    {"__main__"},
]
MACHINERY = {name for floor in FLOORS if floor for name in floor} | {"__init__"}
RESOURCES = sorted(
    path.name
    for path in PACKAGE.iterdir()
    if path.is_dir() and (path / "__init__.py").is_file() and path.name not in MACHINERY
)
# Not for a resource: framework internals (the kit and serving own them) and the driver.
FORBIDDEN_IN_RESOURCES = (
    "fastapi.routing",
    "fastapi.dependencies",
    "fastapi._compat",
    "fastapi.datastructures",
    "starlette",
    "uvicorn",
    "asyncpg",
)


def _unit(module: str) -> str:
    """The top-level unit of a module of this package: `kit`, `items`, `db`, ..."""
    return module.removeprefix(f"{NAME}.").split(".")[0]


def _floor(unit: str) -> int:
    for index, floor in enumerate(FLOORS):
        if (floor is None and unit in RESOURCES) or (floor is not None and unit in floor):
            return index
    raise AssertionError(f"{unit} is on no floor")


def _imports(path: Path) -> list[str]:
    """Every module `path` imports, relative imports resolved against the package."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append(target)
            # `from .kit import routing` imports a module, not a name: count it as one.
            found += [
                f"{target}.{alias.name}"
                for alias in node.names
                if _is_module(f"{target}.{alias.name}")
            ]
    return found


def _is_module(module: str) -> bool:
    if not module.startswith(f"{NAME}."):
        return False
    path = PACKAGE.joinpath(*module.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _package_files(unit: str) -> list[Path]:
    path = PACKAGE / unit
    return sorted(path.rglob("*.py")) if path.is_dir() else [PACKAGE / f"{unit}.py"]


@pytest.mark.parametrize("unit", [*MACHINERY - {"__init__"}, *RESOURCES])
def test_a_module_imports_nothing_above_its_floor(unit: str) -> None:
    upward = [
        f"{path.relative_to(PACKAGE)} imports {target}"
        for path in _package_files(unit)
        for target in _imports(path)
        if target.startswith(f"{NAME}.") and _floor(_unit(target)) > _floor(unit)
    ]
    assert upward == []


@pytest.mark.parametrize("resource", RESOURCES)
def test_a_resource_uses_the_kit_face_and_public_api_only(resource: str) -> None:
    found = []
    for path in _package_files(resource):
        for target in _imports(path):
            own = target == f"{NAME}.{resource}" or target.startswith(f"{NAME}.{resource}.")
            face = target == f"{NAME}.kit"
            forbidden = target.startswith(FORBIDDEN_IN_RESOURCES)
            if forbidden or (target.startswith(f"{NAME}.") and not (own or face)):
                found.append(f"{path.relative_to(PACKAGE)} imports {target}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "state":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} touches .state")
    assert found == []


def test_every_resource_is_in_the_one_list_and_every_floor_exists() -> None:
    listed = importlib.import_module(f"{NAME}.serving.resources")
    served = []
    for name in RESOURCES:
        package = importlib.import_module(f"{NAME}.{name}")
        # A resource with a table exposes RESOURCE; one without (the probes) only its router.
        declared = getattr(package, "RESOURCE", None)
        if declared is not None:
            served.append(declared in listed.RESOURCES)
        else:
            served.append(
                importlib.import_module(f"{package.__name__}.routes").router in listed.ROUTERS
            )
    assert served == [True] * len(RESOURCES)
    assert {"kit", "serving", "observability"} <= {path.name for path in PACKAGE.iterdir()}
