"""The bench imports a bake through tests/baking.py's loaders (bench/bakes.py), never by editing
sys.path itself: a path left behind makes a later import read another bake's package of the same
name, and ties a bench to one layout instead of running as a module against any bake."""

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _edits_of_sys_path(tree: ast.AST) -> list[int]:
    """Lines that name sys.path (sys.path.insert, sys.path[:0] = ..., from sys import path)."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            lines += [node.lineno for alias in node.names if alias.name == "path"]
    return lines


@pytest.mark.parametrize(
    "module", sorted(BENCH.rglob("*.py")), ids=lambda path: str(path.relative_to(BENCH))
)
def test_no_bench_module_touches_sys_path(module: Path) -> None:
    assert _edits_of_sys_path(ast.parse(module.read_text())) == []


def test_the_scan_sees_each_way_of_editing_sys_path() -> None:
    for source in ("import sys\nsys.path.insert(0, 'x')", "import sys\nsys.path[:0] = ['x']",
                   "from sys import path\npath.append('x')"):  # fmt: skip
        assert _edits_of_sys_path(ast.parse(source)) != [], source
