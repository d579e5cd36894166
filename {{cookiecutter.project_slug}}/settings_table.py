"""Write the README's table of settings from the Settings class of src/<package>/settings.py, so
that the README names every setting, with its default, its limits and its description.

    python settings_table.py           write the table into README.md (make settings-readme)
    python settings_table.py --check   exit 1 when the table is stale (CI, pre-commit)

The class is read from its source (Python's ast), not imported: the bake writes the table before
any dependency is installed. A setting without a description stops the script.
"""

import argparse
import ast
import contextlib
import operator
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
START = "<!-- settings:start -->"
END = "<!-- settings:end -->"
_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.LShift: operator.lshift,
}
_LIMITS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


class SettingsTableError(ValueError):
    pass


def _value(node: ast.expr, names: dict[str, Any]) -> Any:
    """A default or a limit as Python evaluates it: literals, arithmetic of constants, module
    constants, and a one-argument call (`Path(SECRETS_DIR)`) shown as its argument."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(item, names) for item in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, names)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.left, names), _value(node.right, names))
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        return _value(node.args[0], names)
    raise SettingsTableError(f"cannot read the value {ast.unparse(node)!r}")


def _constants(*modules: ast.Module) -> dict[str, Any]:
    """The module-level names bound to a value _value can read."""
    names: dict[str, Any] = {}
    for module in modules:
        for statement in module.body:
            target = getattr(statement, "target", None) or next(
                iter(getattr(statement, "targets", [])), None
            )
            value = getattr(statement, "value", None)
            if isinstance(target, ast.Name) and isinstance(value, ast.expr):
                with contextlib.suppress(SettingsTableError):  # not a value a setting uses
                    names[target.id] = _value(value, names)
    return names


def _choices(annotation: ast.expr) -> list[Any]:
    """The values of a Literal[...] annotation; none for any other type."""
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "Literal":
        items = annotation.slice
        return [
            item.value
            for item in (items.elts if isinstance(items, ast.Tuple) else [items])
            if isinstance(item, ast.Constant)
        ]
    return []


def _cell(value: Any) -> str:
    if isinstance(value, list):  # a list setting is a comma-separated variable
        value = ",".join(str(item) for item in value)
    if isinstance(value, bool):
        value = str(value).lower()
    return str(value).replace("|", "\\|").replace("\n", " ")


def settings(package: Path) -> Iterator[tuple[str, str, str, str]]:
    """(variable, default, allowed, description) of each field of Settings, in its order."""
    source = ast.parse((package / "settings.py").read_text())
    names = _constants(ast.parse((package / "settings_sources.py").read_text()), source)
    (cls,) = [
        node for node in source.body if isinstance(node, ast.ClassDef) and node.name == "Settings"
    ]
    for statement in cls.body:
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        if "ClassVar" in ast.unparse(statement.annotation):
            continue  # a constant of the class, not a setting
        name, call = statement.target.id, statement.value
        if name == "model_config":
            continue
        keywords = {keyword.arg: keyword.value for keyword in getattr(call, "keywords", [])}
        if not isinstance(call, ast.Call) or "description" not in keywords:
            raise SettingsTableError(f"settings.py: {name} has no description")
        default = _value(call.args[0], names) if call.args else None
        shown = "(none)" if default in (None, "", []) else f"`{_cell(default)}`"
        allowed = [f"`{_cell(choice)}`" for choice in _choices(statement.annotation)]
        allowed += [
            f"{sign} {_value(keywords[key], names)}"
            for key, sign in _LIMITS.items()
            if key in keywords
        ]
        yield name.upper(), shown, ", ".join(allowed), _cell(_value(keywords["description"], names))


def table(package: Path) -> str:
    lines = [
        START,
        "<!-- Generated by settings_table.py from the Settings class of"
        f" src/{package.name}/settings.py: edit that and run `make settings-readme`. -->",
        "",
        "| Variable | Default | Allowed | Meaning |",
        "|---|---|---|---|",
        *(
            f"| `{name}` | {default} | {allowed} | {text} |"
            for name, default, allowed, text in settings(package)
        ),
        END,
    ]
    return "\n".join(lines)


def package_folder(root: Path) -> Path:
    (package,) = (path.parent for path in (root / "src").glob("*/settings.py"))
    return package


def updated(readme: str, package: Path) -> str:
    """The README with the text between its markers replaced by the current table."""
    before, start, rest = readme.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise SettingsTableError(f"README.md has no {START} ... {END} lines to hold the table")
    return before + table(package) + after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the table is stale")
    parser.add_argument("--root", type=Path, default=HERE, help="the project folder")
    args = parser.parse_args(argv)
    target = args.root / "README.md"
    try:
        text = updated(target.read_text(), package_folder(args.root))
    except SettingsTableError as error:
        print(error, file=sys.stderr)
        return 2
    if args.check:
        if target.read_text() != text:
            print(
                "README.md's settings table is stale: run `make settings-readme`", file=sys.stderr
            )
            return 1
        return 0
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
