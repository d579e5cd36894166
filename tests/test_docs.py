"""The documentation builds with mkdocs --strict: no broken link, no page missing from the nav,
and the reference tables generated from cookiecutter.json and the Settings class."""

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
