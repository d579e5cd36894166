"""mkdocs hook: reference tables generated from the sources, so the docs cannot drift from them.

`<!-- options-reference -->` becomes the table of cookiecutter.json options,
`<!-- settings-reference -->` the table of the generated service's Settings class (of a bake with
each `auth` value: a setting that only some bring says which), and
`<!-- baked: PATH -->` the file PATH of a project baked with the default options (the guides a
generated project carries itself, under its docs/, are shown as users get them, with a note
saying where they live; their text exists only there), and
`<!-- include: PATH -->` a file of this repository, such as a table a benchmark wrote.
"""

import functools
import importlib
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from cookiecutter.main import cookiecutter
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]
AUTH_VALUES = ("none", "api_key", "jwt")

OPTION_HELP = {
    "project_name": "Human name of the service, used in titles and the OpenAPI document.",
    "project_slug": "Folder, distribution and Helm chart name; lowercase letters, digits, hyphens.",
    "package_name": "The Python package under `src/`; a lowercase identifier.",
    "description": "One sentence for pyproject.toml, the README and the OpenAPI document.",
    "author_name": "Author recorded in pyproject.toml.",
    "author_email": "Author e-mail recorded in pyproject.toml.",
    "resource": "The first CRUD resource, singular snake_case: module, class and function names.",
    "resource_plural": "Plural snake_case: URL paths, the table and the resource folder.",
    "fields": "The first resource's fields, one line: `name:type`, then `?` (optional, nullable), "
    "`=value` (a default), `:unique`; types `str(N)`, `text[(N)]`, `int`/`bigint`/`money` with "
    "bounds (`int(>=0,<=9)`), `bool`, `date`, `timestamp`, `uuid`, `enum(a\\|b)` "
    "([the grammar](../adding-a-resource.md#the-field-spec)).",
    "python_version": "Lowest Python the service supports: requires-python, ruff, mypy, the image.",
    "auth": "`api_key`: X-API-Key checked against SHA-256 digests; `jwt`: bearer tokens of an OIDC "
    "issuer verified against its JWKS, a read and a write scope; `none`: no authentication.",
    "lock_dependencies": "`yes` writes uv.lock at bake time when uv is on PATH.",
    "jobs": "`postgres`: background jobs on the service's own PostgreSQL (pgqueuer), enqueued in "
    "the write's transaction; each create enqueues its `created` event, delivered to `WEBHOOK_URL` "
    "by `python -m <package> worker` (its own Deployment in the chart); `none`: no queue, no "
    "worker.",
}


def _cell(value: Any) -> str:
    if isinstance(value, list):  # list settings are comma-separated variables
        value = ",".join(value)
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
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


def _settings_fields(auth: str) -> dict[str, Any]:
    """The Settings fields of a bake with `auth`: its package imported, then forgotten, so that
    the next bake's package of the same name is imported afresh."""
    source = str(baked_project(auth) / "src")
    sys.path.insert(0, source)
    try:
        module = importlib.import_module("inventory_service.settings")
        fields: dict[str, Any] = dict(module.Settings.model_fields)
    finally:
        sys.path.remove(source)
        for name in [name for name in sys.modules if name.partition(".")[0] == "inventory_service"]:
            del sys.modules[name]
    return fields


def settings_table() -> str:
    by_auth = {auth: _settings_fields(auth) for auth in AUTH_VALUES}
    every = {name: field for fields in by_auth.values() for name, field in fields.items()}
    rows = ["| Variable | Default | Limits | Meaning |", "|---|---|---|---|"]
    for name, field in every.items():
        if not field.description:
            raise PluginError(f"setting {name} has no description")
        limits = ", ".join(
            f"{key} {getattr(rule, key)}"
            for rule in field.metadata
            for key in ("ge", "gt", "le", "lt")
            if getattr(rule, key, None) is not None
        )
        default = "(none)" if field.default in (None, []) else f"`{_cell(field.default)}`"
        present = [auth for auth, fields in by_auth.items() if name in fields]
        only = f" *(auth={', '.join(present)} only)*" if len(present) < len(AUTH_VALUES) else ""
        rows.append(
            f"| `{name.upper()}` | {default} | {limits} | {_cell(field.description)}{only} |"
        )
    return "\n".join(rows)


@functools.cache
def baked_project(auth: str = "none") -> Path:
    output = Path(tempfile.mkdtemp(prefix="fastapi-1core-docs-"))
    context = {"lock_dependencies": "no", "auth": auth}
    project = cookiecutter(str(ROOT), no_input=True, output_dir=str(output), extra_context=context)
    return Path(project)


def _baked_file(match: re.Match[str]) -> str:
    name = match.group(1)
    path = baked_project() / name
    if not path.is_file():
        raise PluginError(f"a baked project has no {name}")
    text = path.read_text()
    if not name.startswith("docs/"):
        return text
    title, _, body = text.partition("\n")
    note = (
        '!!! note "Shipped in every generated project"\n'
        f"    Every baked project carries this guide as `{name}`, in its own names; shown\n"
        "    here as a project baked with the default options has it. Its source is\n"
        f"    `{{{{cookiecutter.project_slug}}}}/{name}` in this repository.\n"
    )
    return f"{title}\n\n{note}{body}"


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
