"""mkdocs hook: reference tables generated from the sources, so the docs cannot drift from them.

`<!-- options-reference -->` becomes the table of cookiecutter.json options,
`<!-- settings-reference -->` the table of the generated service's Settings class, and
`<!-- baked: PATH -->` the file PATH of a project baked with the default options (the pages a
generated project carries itself, such as its deployment guide, are shown as users get them), and
`<!-- include: PATH -->` a file of this repository, such as a table a benchmark wrote.
"""

import functools
import importlib.util
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from cookiecutter.main import cookiecutter

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_FILE = ROOT / "{{cookiecutter.project_slug}}" / "src" / "{{cookiecutter.package_name}}" / "settings.py"

OPTION_HELP = {
    "project_name": "Human name of the service, used in titles and the OpenAPI document.",
    "project_slug": "Folder, distribution and Helm chart name; lowercase letters, digits, hyphens.",
    "package_name": "The Python package under `src/`; a lowercase identifier.",
    "description": "One sentence for pyproject.toml, the README and the OpenAPI document.",
    "author_name": "Author recorded in pyproject.toml.",
    "author_email": "Author e-mail recorded in pyproject.toml.",
    "resource": "The CRUD resource, singular snake_case: module, class and function names.",
    "resource_plural": "Plural snake_case: URL paths, the table and the resource folder.",
    "python_version": "Lowest Python the service supports: requires-python, ruff, mypy, the image.",
    "lock_dependencies": "`yes` writes uv.lock at bake time when uv is on PATH.",
}


def _cell(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text.replace("|", "\\|").replace("\n", " ")


def options_table() -> str:
    options = json.loads((ROOT / "cookiecutter.json").read_text())
    public = [name for name in options if not name.startswith("_")]
    missing = [name for name in public if name not in OPTION_HELP]
    if missing:
        raise PluginError(f"options without documentation: {', '.join(missing)}")
    rows = ["| Option | Default | Meaning |", "|---|---|---|"]
    for name in public:
        default = options[name]
        shown = " / ".join(default) if isinstance(default, list) else default
        rows.append(f"| `{name}` | `{_cell(shown)}` | {OPTION_HELP[name]} |")
    return "\n".join(rows)


def settings_table() -> str:
    spec = importlib.util.spec_from_file_location("_service_settings", SETTINGS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = ["| Variable | Default | Limits | Meaning |", "|---|---|---|---|"]
    for name, field in module.Settings.model_fields.items():
        if not field.description:
            raise PluginError(f"setting {name} has no description")
        limits = ", ".join(
            f"{key} {getattr(rule, key)}"
            for rule in field.metadata
            for key in ("ge", "gt", "le", "lt")
            if getattr(rule, key, None) is not None
        )
        default = "(none)" if field.default is None else f"`{_cell(field.default)}`"
        rows.append(f"| `{name.upper()}` | {default} | {limits} | {_cell(field.description)} |")
    return "\n".join(rows)


@functools.cache
def baked_project() -> Path:
    output = Path(tempfile.mkdtemp(prefix="fastapi-1core-docs-"))
    project = cookiecutter(
        str(ROOT), no_input=True, output_dir=str(output), extra_context={"lock_dependencies": "no"}
    )
    return Path(project)


def _baked_file(match: re.Match[str]) -> str:
    path = baked_project() / match.group(1)
    if not path.is_file():
        raise PluginError(f"a baked project has no {match.group(1)}")
    return path.read_text()


def _repository_file(match: re.Match[str]) -> str:
    path = ROOT / match.group(1)
    if not path.is_file():
        raise PluginError(f"no file {match.group(1)} to include")
    return path.read_text()


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    markdown = re.sub(r"<!-- baked: (\S+) -->", _baked_file, markdown)
    markdown = re.sub(r"<!-- include: (\S+) -->", _repository_file, markdown)
    if "<!-- options-reference -->" in markdown:
        markdown = markdown.replace("<!-- options-reference -->", options_table())
    if "<!-- settings-reference -->" in markdown:
        markdown = markdown.replace("<!-- settings-reference -->", settings_table())
    return markdown
