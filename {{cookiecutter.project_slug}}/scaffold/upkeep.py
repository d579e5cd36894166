"""What a template update leaves alone, and `make template-update`.

cruft re-bakes the template at the project's commit and at the new one and applies the
difference. The list of what it must not touch, because it is yours, is `[tool.cruft] skip` in
pyproject.toml (cruft reads it beside .cruft.json's, and unlike .cruft.json, which cruft writes
after the bake's hook has run, it is there from the bake on): the locks (`uv.lock` and its pip
export `requirements.lock.txt`), your migrations
(`migrations/versions`), the resources list, and every resource's folder and tests, which
`make resource` and `make resource-remove` add and take out here. The machinery's migrations
(`migrations/machinery/`) are not in it: one the template adds later arrives, on a branch of
its own that `alembic upgrade heads` applies after yours.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

PYPROJECT = "pyproject.toml"
# Written by the bake's hook (or `cruft create`): the template, its commit and the answers.
CRUFT_RECORD = ".cruft.json"
# Set for cruft's renders during `make template-update`: the hook then writes no uv.lock.
UPDATE_ENV = "TEMPLATE_UPDATE"
_SKIP = re.compile(r"^\[tool\.cruft\]\n(?:.*\n)*?skip = \[\n((?:    .*\n)*)\]", re.MULTILINE)


def resource_paths(package: str, plural: str) -> list[str]:
    """A resource's own paths, as cruft's skip list names them."""
    return [f"src/{package}/{plural}", f"tests/{plural}"]


def _edit_skip(root: Path, add: list[str], remove: list[str]) -> Path | None:
    path = root / PYPROJECT
    text = path.read_text()
    found = _SKIP.search(text)
    if found is None:
        return None  # no [tool.cruft] skip list: a project that opted out of cruft
    entries = [line.strip().rstrip(",").strip('"') for line in found.group(1).splitlines()]
    entries = [entry for entry in entries if entry not in remove]
    entries += [entry for entry in add if entry not in entries]
    lines = "".join(f'    "{entry}",\n' for entry in entries)
    path.write_text(text[: found.start(1)] + lines + text[found.end(1) :])
    return path


def skip_resource(root: Path, package: str, plural: str) -> Path | None:
    return _edit_skip(root, resource_paths(package, plural), [])


def unskip_resource(root: Path, package: str, plural: str) -> Path | None:
    return _edit_skip(root, [], resource_paths(package, plural))


def _run(root: Path, *command: str, env: dict[str, str] | None = None) -> int:
    print("$", " ".join(command), flush=True)
    return subprocess.run(list(command), cwd=root, env=env, check=False).returncode


def _output(root: Path, *command: str) -> str:
    done = subprocess.run(list(command), cwd=root, capture_output=True, text=True, check=False)
    return done.stdout


def _venv_tool(name: str) -> str | None:
    """A tool of the venv this runs in (`make template-update` runs the venv's Python: uv is one of
    its dev dependencies), else the one on PATH."""
    beside = Path(sys.executable).parent / name  # not resolved: the venv's bin/, not the base's
    return str(beside) if beside.is_file() else shutil.which(name)


def _cruft() -> list[str]:
    found = _venv_tool("cruft")
    uvx = _venv_tool("uvx") or "uvx"
    return [found] if found else [uvx, "--from", "cruft>=2.15,<3", "cruft"]


def conflicts(root: Path) -> list[str]:
    """Files left to resolve by hand: unmerged, with conflict markers, or a .rej file."""
    unmerged = _output(root, "git", "diff", "--name-only", "--diff-filter=U").split()
    marked = _output(root, "git", "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>) ").split()
    rejected = [str(path.relative_to(root)) for path in root.rglob("*.rej")]
    return sorted({*unmerged, *marked, *rejected})


def template_update(root: Path) -> int:
    """cruft update, then the lock and what is derived, all staged; lint and tests; says what
    changed."""
    if not (root / CRUFT_RECORD).is_file():
        print(
            f"No {CRUFT_RECORD}: the project is not linked to its template (a bake from a folder "
            "that is not a git checkout). Link it at the commit it was baked from, commit, then "
            "run this again:\n  cruft link <template> --checkout <commit>  (docs/upgrading.md)",
            file=sys.stderr,
        )
        return 2
    if _output(root, "git", "status", "--porcelain").strip():
        print("Commit or stash your changes first: cruft applies the update to a clean tree.")
        return 2
    # cruft's two renders run the bake's hook, which lays the code out with the ruff it finds on
    # PATH: the venv's, as `make lint` does, so that the renders differ only by the update.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, UPDATE_ENV: "1", "PATH": path}
    updated = _run(root, *_cruft(), "update", "--skip-apply-ask", env=env)
    if updated != 0:
        return updated
    left = conflicts(root)
    steps: list[tuple[str, ...]] = [(sys.executable, "deploy/helm/chart_readme.py")]
    if not left:
        # pyproject.toml's bounds may have moved: uv.lock and requirements.lock.txt, one target;
        # and the machinery may have changed the API's document (or the project has none yet).
        if (root / "uv.lock").is_file():
            steps.append(("make", "--no-print-directory", "lock"))
        steps.append((sys.executable, "-m", "scaffold", "openapi"))
    failed = [step for step in steps if _run(root, *step) != 0]
    if not left:
        # cruft stages its patch but not .cruft.json, its new record; what the steps rewrote is
        # part of the update too. The tree was clean before: everything changed is the update's.
        _run(root, "git", "add", "-A")
    print("\nChanged by the update (staged; review with `git diff --cached`):")
    print(_output(root, "git", "status", "--short") or "  nothing: the project was up to date")
    print("Left alone (yours, [tool.cruft] skip in pyproject.toml): the locks, your migrations,")
    print("  the resources list and every resource's folder and tests.")
    if left:
        print("Conflicts to resolve by hand, then `make lint test`:", *left, sep="\n  ")
        return 1
    checks = [_run(root, "make", target) for target in ("lint", "test")]
    return 1 if failed or any(checks) else 0
