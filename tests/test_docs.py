"""The documentation builds with mkdocs --strict: no broken link, no page missing from the nav,
and the reference tables generated from cookiecutter.json and the Settings class; the README's
option table names every option of cookiecutter.json."""

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

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


# Words of a page that tells of one machine or one run rather than of the project.
_ONE_MACHINE_OR_RUN = re.compile(
    r"\blast run\b|\bthis (?:shared )?(?:machine|VM)\b|\bmeasurement lock\b", re.IGNORECASE
)


def test_docs_speak_of_the_project_not_of_one_machine_or_run() -> None:
    found = [
        f"{page.relative_to(TEMPLATE)}:{number}: {line.strip()}"
        for page in sorted((TEMPLATE / "docs").rglob("*.md"))
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if _ONE_MACHINE_OR_RUN.search(line)
    ]
    assert found == []
