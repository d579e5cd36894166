"""The documentation builds with mkdocs --strict: no broken link, no page missing from the nav,
and the reference tables generated from cookiecutter.json and the Settings class; the README's
option table names every option of cookiecutter.json; the nav lists every page and the index
links each; the figures files under docs/ name only commands and files that exist."""

import itertools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .baking import TEMPLATE


def test_docs_build_strict(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=TEMPLATE,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={
            "NO_MKDOCS_2_WARNING": "1",
            "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        },
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    settings_page = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text()
    assert "LIMIT_CONCURRENCY" in settings_page
    assert "STATEMENT_CACHE_SIZE" in settings_page
    for setting in (
        "CORS_ALLOW_ORIGINS",
        "SECRETS_DIR",
        "TRACING",
        "API_KEY_HASHES",
        "JWT_JWKS_URL",
    ):
        assert setting in settings_page
    options_page = (tmp_path / "site" / "reference" / "options" / "index.html").read_text()
    assert "resource_plural" in options_page
    assert "api_key" in options_page


def _option_rows() -> dict[str, str]:
    """The README's option table: each option named in a row's first cell, with the whole row."""
    lines = (TEMPLATE / "README.md").read_text().splitlines()
    start = lines.index("| Option | Default | Meaning |")
    rows: dict[str, str] = {}
    for line in itertools.takewhile(lambda line: line.startswith("|"), lines[start + 2 :]):
        for name in re.findall(r"`([^`]+)`", line.split("|")[1]):
            rows[name] = line
    return rows


def test_readme_option_table_names_every_option_and_each_of_its_choices() -> None:
    options = json.loads((TEMPLATE / "cookiecutter.json").read_text())
    public = {name: value for name, value in options.items() if not name.startswith("_")}
    rows = _option_rows()
    assert [name for name in public if name not in rows] == []
    for name, value in public.items():
        if isinstance(value, list):
            named = set(re.findall(r"`([^`]+)`", rows[name]))
            assert [choice for choice in value if choice not in named] == [], name


BAKED = "{{cookiecutter.project_slug}}"
# Words of a page that tells of one machine or one run rather than of the project.
_ONE_MACHINE_OR_RUN = re.compile(
    r"\blast run\b|\bthis (?:shared )?(?:machine|VM)\b|\bmeasurement lock\b", re.IGNORECASE
)


def test_docs_speak_of_the_project_not_of_one_machine_or_run() -> None:
    # The guides every bake carries are pages of the site too (scripts/docs_hooks.py shows them).
    pages = [*(TEMPLATE / "docs").rglob("*.md"), *(TEMPLATE / BAKED / "docs").rglob("*.md")]
    found = [
        f"{page.relative_to(TEMPLATE)}:{number}: {line.strip()}"
        for page in sorted(pages)
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if _ONE_MACHINE_OR_RUN.search(line)
    ]
    assert found == []


# A path into this repository starts with one of its folders; a pytest node id may follow it.
_FOLDERS = "|".join(
    re.escape(path.name) for path in TEMPLATE.iterdir() if path.is_dir() and path.name[0] != "."
)
_REPOSITORY_PATH = re.compile(rf"(?<![\w/.-])(?:{_FOLDERS})/[\w./*-]*[\w*](?:::\w+)?")
_PYTHON_MODULE = re.compile(r"\bpython3? -m ([\w.]+)")
_MAKE_TARGET = re.compile(r"\bmake ([\w-]+)")


def _strings(value: Any) -> Iterator[str]:
    """Every string of a JSON document, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _missing(text: str) -> Iterator[str]:
    """The files, tests, modules and make targets `text` names that the repository lacks."""
    for reference in _REPOSITORY_PATH.findall(text):
        path, _, test = reference.partition("::")
        files = sorted(TEMPLATE.glob(path))
        defines = re.compile(rf"^(?:async )?def {test}\b", re.MULTILINE)
        if not files or (test and not any(defines.search(file.read_text()) for file in files)):
            yield reference
    for module in _PYTHON_MODULE.findall(text):
        base = TEMPLATE.joinpath(*module.split("."))
        if not (base.with_suffix(".py").is_file() or (base / "__main__.py").is_file()):
            yield f"python -m {module}"
    targets = re.findall(r"^([\w-]+):", (TEMPLATE / "Makefile").read_text(), re.MULTILINE)
    for target in _MAKE_TARGET.findall(text):
        if target not in targets:
            yield f"make {target}"


def test_figures_files_name_only_commands_and_files_that_exist() -> None:
    figures = sorted((TEMPLATE / "docs").rglob("*.json"))
    assert figures, "no figures file under docs/"
    missing = {
        str(path.relative_to(TEMPLATE)): sorted(
            {name for text in _strings(json.loads(path.read_text())) for name in _missing(text)}
        )
        for path in figures
    }
    assert {path: names for path, names in missing.items() if names} == {}


def test_every_reliability_figure_is_one_a_test_still_records() -> None:
    figures = json.loads((TEMPLATE / "docs" / "reliability-figures.json").read_text())
    tests = "".join(path.read_text() for path in sorted((TEMPLATE / "tests").glob("*.py")))
    recorded = set(re.findall(r"\.record\(\s*\"(\w+)\"", tests))
    assert [name for name in figures if name[0] != "_" and name not in recorded] == []


def test_figures_check_finds_a_missing_test_file_module_and_make_target() -> None:
    text = (
        "pytest tests/test_docs.py::test_figures_files_name_only_commands_and_files_that_exist "
        "tests/test_gone.py tests/test_docs.py::test_gone; python -m bench.request_head; "
        "python -m bench.gone; make bench; make gone"
    )
    assert list(_missing(text)) == [
        "tests/test_gone.py",
        "tests/test_docs.py::test_gone",
        "python -m bench.gone",
        "make gone",
    ]


def _nav_pages(nav: Any) -> Iterator[str]:
    """The page of every entry of mkdocs.yml's nav, sections walked."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for entry in nav:
            yield from _nav_pages(entry)
    elif isinstance(nav, dict):
        for entry in nav.values():
            yield from _nav_pages(entry)


def test_nav_lists_every_page_and_the_index_links_each_guide() -> None:
    config = yaml.safe_load((TEMPLATE / "mkdocs.yml").read_text())
    docs = TEMPLATE / config["docs_dir"]
    excluded = set(config.get("exclude_docs", "").split())
    pages = {str(page.relative_to(docs)) for page in docs.rglob("*.md")} - excluded
    nav = list(_nav_pages(config["nav"]))
    assert sorted(pages - set(nav)) == []
    assert sorted(set(nav) - pages) == []
    linked = set(re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", (docs / "index.md").read_text()))
    assert [page for page in nav if page != "index.md" and page not in linked] == []
