"""openapi.json: the service's OpenAPI document as a reviewed file, written from create_app().

Every API change then shows in review as a diff of this file; the clients (`make client`) and the
breaking-change gate (`make api-diff`) read it. tests/test_openapi_document.py fails, naming the
first difference, when the app and the file disagree.
"""

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .generate import package_of

DOCUMENT = "openapi.json"


def build_document(root: Path) -> dict[str, Any]:
    """The document of the app the project's src/ builds, as its /openapi.json would serve it.

    app.openapi() directly: in production the service serves no /openapi.json (DOCS_IN_PROD).
    """
    source = str(root / "src")
    if source not in sys.path:
        sys.path.insert(0, source)
    package = package_of(root)
    app = importlib.import_module(f"{package}.serving.app")
    settings = importlib.import_module(f"{package}.settings")
    document: dict[str, Any] = app.create_app(settings.Settings(app_env="dev")).openapi()
    return document


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_document(root: Path) -> Path:
    path = root / DOCUMENT
    path.write_text(render(build_document(root)))
    return path


def refresh_document(root: Path) -> Path | None:
    """Rewrite openapi.json in a fresh interpreter (the resources just written are imported anew).

    The bake's hook runs on cookiecutter's Python, which may lack the service's dependencies:
    then the file is left for `make openapi`, and the line says so.
    """
    command = [sys.executable, "-m", "scaffold", "--root", str(root.resolve()), "openapi"]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"{DOCUMENT} not rewritten ({reason}): run `make openapi`", file=sys.stderr)
        return None
    return root / DOCUMENT


def first_difference(expected: Any, actual: Any, pointer: str = "") -> str | None:
    """Where two JSON documents first differ, as a JSON pointer and the two values; None if equal."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in [*expected, *(key for key in actual if key not in expected)]:
            here = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key not in actual:
                return f"{here}: only in {DOCUMENT}"
            if key not in expected:
                return f"{here}: only in the app's document"
            found = first_difference(expected[key], actual[key], here)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(left, right, f"{pointer}/{index}")
            if found is not None:
                return found
        return None
    if expected != actual:
        was, now = json.dumps(expected)[:200], json.dumps(actual)[:200]
        return f"{pointer or '/'}: {was} in {DOCUMENT}, {now} in the app's"
    return None
