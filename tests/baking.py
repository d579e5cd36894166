"""Bake the template into a folder, and run a baked project's own tools."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from cookiecutter.main import cookiecutter

TEMPLATE = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
# A baked project's own suite, run with `run`, leaving no pytest cache in the bake.
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")


def bake(output_dir: Path, *, template: Path = TEMPLATE, **context: Any) -> Path:
    """Bake `template` (this one unless told) with `context` over the defaults; return the project
    folder."""
    extra = {"lock_dependencies": "no", **context}
    project = cookiecutter(
        str(template), no_input=True, output_dir=str(output_dir), extra_context=extra
    )
    return Path(project)


def tool_env(project: Path, **extra: str) -> dict[str, str]:
    """The template's venv first on PATH, the baked package importable without installing it."""
    return {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(project / "src"),
        **extra,
    }


def run(
    project: Path, *command: str, timeout: float = 900, **env: str
) -> subprocess.CompletedProcess[str]:
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


GIT = ["git", "-c", "user.name=Template Test", "-c", "user.email=test@example.com"]


def git(folder: Path, *args: str) -> str:
    result = subprocess.run([*GIT, *args], cwd=folder, capture_output=True, text=True, check=True)
    return result.stdout.strip()


def copy_of_template(folder: Path) -> Path:
    """The template as it is on disk, committed or not, without what git ignores (caches, venv)."""
    files = git(TEMPLATE, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split(
        "\0"
    )
    for name in filter(None, files):
        source = TEMPLATE / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder


def git_copy_of_template(folder: Path) -> Path:
    """A git repository holding the template as it is on disk (committed or not), for cruft."""
    copy_of_template(folder)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "template v1")
    return folder


def load_loadtest(project: Path, module: str) -> Any:
    """Import `loadtest.<module>` from a baked project (its scenario table, its k6 and wrk writers),
    then forget it and the service's package it read the resources from, so that another bake's
    `loadtest` (and its package, of the same name maybe) can be imported after it."""
    roots = [str(project), str(project / "src")]
    packages = {"loadtest"} | {path.name for path in (project / "src").iterdir() if path.is_dir()}
    sys.path[:0] = roots
    try:
        return importlib.import_module(f"loadtest.{module}")
    finally:
        for root in roots:
            sys.path.remove(root)
        for name in [name for name in sys.modules if name.partition(".")[0] in packages]:
            del sys.modules[name]


def load_dev_module(project: Path, module: str) -> Any:
    """Import a dev-only module that lives beside a baked project's `src/` (e.g. `devdb`)."""
    name = f"_{project.name.replace('-', '_')}_{module}_{abs(hash(project))}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, project / f"{module}.py")
        assert spec is not None, project / f"{module}.py"
        assert spec.loader is not None, project / f"{module}.py"
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


# The shipped search bisects to 5 %: what these tests assert (the search's laws, the verdicts)
# holds at any precision, and each bisection step is a trial or two of every scenario they run.
SHIPPED_PRECISION = "\nprecision = 0.05\n"


def coarse_search_budget(project: Path, folder: Path, *, more: str = "") -> Path:
    """The bake's loadtest/budget.toml with a search that stops within 20 % (`more` appended),
    written into `folder`."""
    budget = (project / "loadtest" / "budget.toml").read_text()
    assert SHIPPED_PRECISION in budget
    path = folder / "budget.toml"
    path.write_text(budget.replace(SHIPPED_PRECISION, "\nprecision = 0.2\n") + more)
    return path
