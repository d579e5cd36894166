"""Bake the template into a folder, and run a baked project's own tools."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cookiecutter.main import cookiecutter

TEMPLATE = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def bake(output_dir: Path, **context: Any) -> Path:
    """Bake with `context` over the defaults; return the project folder."""
    extra = {"lock_dependencies": "no", **context}
    project = cookiecutter(str(TEMPLATE), no_input=True, output_dir=str(output_dir), extra_context=extra)
    return Path(project)


def tool_env(project: Path, **extra: str) -> dict[str, str]:
    """The template's venv first on PATH, the baked package importable without installing it."""
    return {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(project / "src"),
        **extra,
    }


def run(project: Path, *command: str, timeout: float = 900, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command),
        cwd=project,
        env=tool_env(project, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def load_module(project: Path, package: str, module: str) -> Any:
    """Import `package.module` from a baked project (e.g. its throwaway-PostgreSQL helper)."""
    sys.path.insert(0, str(project / "src"))
    try:
        return __import__(f"{package}.{module}", fromlist=[module])
    finally:
        sys.path.remove(str(project / "src"))
