"""Every file the project's comments, docstrings and docs name is a file of the project.

Read: the comments and docstrings of every Python file; the comment lines (`#`, `//`) of the
Makefile, Dockerfile, YAML, TOML, ini and JavaScript files; the prose of every Markdown file.

A reference, and where it must be found:
- a Markdown link that is not a URL: beside the linking file, as a reader's browser resolves it;
- a path (`docs/deploying.md`, `kit/routing.py`, `tests/kit/`, `../README.md`) whose first folder
  is a folder of the project or whose file name ends in one of SUFFIXES: from the project root,
  `src/<package>/`, the Helm chart's folder, the citing file's folder or one above it, or, for a
  test, the folder of `src/<package>/` it mirrors or one above that; a test named after it
  (`tests/test_db.py::test_release_sends_no_reset_query`) must be defined in that file;
- a bare file name ending in one of SUFFIXES (`sql.py`, `budget.toml`): some file of the project
  has that name.

Not a reference, so never a false alarm:
- a URL, or anything inside one; a path with a placeholder or a glob (`<chart>/`, `{id}`, `*`);
- a path whose first folder is a module installed beside the project (`uvicorn/server.py`):
  it cites a library's source;
- a fenced code block of a Markdown file: its commands and the files it shows (a new resource's
  folder, a migration to write) are examples for the reader to create;
- a file the project's own commands write (WRITTEN, each with its command);
- a frame of a profile (`handler (kit/routing.py:243)`): the sampler's short name of a file and
  line, of the project or of a library, as `make profile` writes it;
- a leftover template marker, which the template's own tests refuse.
"""

import ast
import importlib.util
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import {{ cookiecutter.package_name }}

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path({{ cookiecutter.package_name }}.__file__).resolve().parent
SUFFIXES = {"py", "md", "toml", "yaml", "yml", "json", "js", "ini", "mako", "tpl", "txt", "lock"}
# Files and folders the project writes itself: cited before they exist.
WRITTEN = {
    "loadtest/results/": "make loadtest, make k6, make k6-cluster",
    "values-capacity.yaml": "make capacity",
    "k6-config.json": "make k6",
    "k6-summary.json": "make k6",
    "uv.lock": "make lock, make install with uv, or a bake with lock_dependencies=yes",
    "requirements.lock.txt": "make lock, make pip-lock, or a bake with uv and lock_dependencies=yes",
    ".cruft.json": "cruft create or cruft link (docs/upgrading.md)",
    "clients/python": "make client",
    "clients/python/": "make client",
    "clients/typescript/": "make client",
    ".speedscope.json": "make profile (loadtest/results/profile-<time>-<scenario>.speedscope.json)",
}
_SKIPPED_FOLDERS = {"__pycache__", "node_modules", "build", "dist"}
_COMMENTED = {".toml", ".yaml", ".yml", ".ini", ".js"}
_COMMENTED_NAMES = {"Makefile", "Dockerfile", ".dockerignore"}

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
_FRAME = re.compile(r"\([\w./-]+\.py:\d+\)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_SUFFIX = "|".join(sorted(SUFFIXES))
_PATH = re.compile(r"(?<![\w/.:@$-])((?:\.\.?/|\.?[\w-][\w.-]*/)+(?:[\w.-]*\w)?)(::\w+)?")
_NAME = re.compile(rf"(?<![\w/.:@$-])(\.?[\w-][\w.-]*\.(?:{_SUFFIX}))(?![\w/-])")
_PLACEHOLDER = frozenset("<{*[$")  # what follows a path that is a pattern, not a file


def _written(reference: str) -> bool:
    return any(
        f"{reference}/".startswith(name) or reference.rpartition("/")[2] == name for name in WRITTEN
    )


def _project_files() -> list[Path]:
    """Every file of the project, its virtualenvs, caches and written results left out."""

    def walk(folder: Path) -> Iterator[Path]:
        for path in sorted(folder.iterdir()):
            if path.is_dir():
                hidden = path.name.startswith(".") and path.name != ".github"
                skipped = path.name in _SKIPPED_FOLDERS or path.name.endswith(".egg-info")
                if not (hidden or skipped or _written(str(path.relative_to(ROOT)) + "/")):
                    yield from walk(path)
            else:
                yield path

    return list(walk(ROOT))


FILES = _project_files()
FOLDERS = {part for path in FILES for part in path.relative_to(ROOT).parts[:-1]}
NAMES = {path.name for path in FILES}


def _python_text(source: str) -> Iterator[str]:
    """The comments and docstrings of a Python module."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                yield docstring


def _markdown_prose(source: str) -> Iterator[str]:
    """A Markdown file's lines outside its fenced code blocks."""
    fenced = False
    for line in source.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            yield line


def _comment_lines(source: str, marker: str) -> Iterator[str]:
    """What follows a comment marker that starts a line or follows a space."""
    for line in source.splitlines():
        start = line.find(marker)
        while start > 0 and not line[start - 1].isspace():
            start = line.find(marker, start + 1)
        if start >= 0:
            yield line[start:]


def _texts(path: Path) -> Iterator[str]:
    source = path.read_text(errors="replace")
    if path.suffix == ".py":
        yield from _python_text(source)
    elif path.suffix == ".md":
        yield from _markdown_prose(source)
    elif path.suffix in _COMMENTED or path.name in _COMMENTED_NAMES:
        yield from _comment_lines(source, "//" if path.suffix == ".js" else "#")


def _bases(citing: Path) -> list[Path]:
    """The folders a path cited by `citing` may be relative to."""
    folder = citing.parent
    above = [folder, *folder.parents]
    relative = folder.relative_to(ROOT)
    if relative.parts[:1] == ("tests",):
        mirror = PACKAGE.joinpath(*relative.parts[1:])
        above += [mirror, *mirror.parents]
    charts = [chart.parent for chart in ROOT.glob("deploy/helm/*/Chart.yaml")]
    return [
        base for base in [ROOT, PACKAGE, *charts, *above] if base == ROOT or ROOT in base.parents
    ]


def _upstream(first: str) -> bool:
    """Whether `first` names a module installed beside the project, not one of the project."""
    if not first.isidentifier() or first in FOLDERS:
        return False
    spec = importlib.util.find_spec(first)
    if spec is None:
        return False
    origin = Path(spec.origin or "/")
    # Installed: outside the project, or in a virtualenv inside it (make install's .venv/).
    return ROOT not in origin.parents or "site-packages" in origin.parts


def _defines(path: Path, test: str) -> bool:
    return path.is_file() and bool(
        re.search(rf"^(?:async )?def {test}\b", path.read_text(), re.MULTILINE)
    )


def _has_suffix(name: str) -> bool:
    return "." in name and name.rpartition(".")[2] in SUFFIXES


def _missing_paths(text: str, citing: Path) -> Iterator[str]:
    for match in _PATH.finditer(text):
        reference, test = match.group(1), (match.group(2) or "")[2:]
        parts = [part for part in reference.rstrip("/").split("/") if part not in (".", "..")]
        placeholder = text[match.end() : match.end() + 1] in _PLACEHOLDER
        named = bool(parts) and (parts[0] in FOLDERS or _has_suffix(parts[-1]))
        if placeholder or not named or _upstream(parts[0]) or _written(reference):
            continue
        found = [base / reference for base in _bases(citing) if (base / reference).exists()]
        if not found or (test and not any(_defines(path, test) for path in found)):
            yield reference + (f"::{test}" if test else "")


def _missing_names(text: str) -> Iterator[str]:
    for name in _NAME.findall(text):
        if name not in NAMES and not _written(name):
            yield name


def _missing_links(text: str, citing: Path) -> Iterator[str]:
    for target in _LINK.findall(text):
        path = target.partition("#")[0]
        if path and ":" not in path and not (citing.parent / path).exists():
            yield target


def missing(text: str, citing: Path) -> list[str]:
    """The references of `text`, cited by the file `citing`, that name no file of the project."""
    if citing.suffix == ".md":
        links = list(_missing_links(text, citing))
        text = _LINK.sub("]", text)
    else:
        links = []
    text = _FRAME.sub(" ", _URL.sub(" ", text))
    return [*links, *_missing_paths(text, citing), *_missing_names(text)]


def test_every_file_the_comments_docstrings_and_docs_name_exists() -> None:
    found = {
        f"{path.relative_to(ROOT)}: {reference}"
        for path in FILES
        for text in _texts(path)
        for reference in missing(text, path)
    }
    assert sorted(found) == []


def test_the_check_finds_a_missing_path_name_link_and_test() -> None:
    text = (
        "kit/routing.py, routing.py, ../README.md, [deploying](deploying.md), tests/conftest.py, "
        "bench/gone.py, gone.py, docs/gone.md, tests/conftest.py::test_gone, [gone](gone.md#top); "
        "not checked: uvicorn/server.py, https://example.org/?page=gone.md, and/or, src/gone/*.py, "
        "deploy/helm/<chart>/gone.yaml, loadtest/results/gone.json"
    )
    assert missing(text, ROOT / "docs" / "deploying.md") == [
        "gone.md#top",
        "bench/gone.py",
        "docs/gone.md",
        "tests/conftest.py::test_gone",
        "gone.py",
    ]
