"""Finish the baked project: lock dependencies when uv is present (uv.lock, and its pins for pip
in requirements.lock.txt), record the template, its commit and the answers in .cruft.json, and
print the next steps."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SLUG = "{{ cookiecutter.project_slug }}"
RESOURCE = "{{ cookiecutter.resource }}"
RESOURCE_PLURAL = "{{ cookiecutter.resource_plural }}"
FIELDS = """{{ cookiecutter.fields }}"""
# Typed as str: before rendering the two sides are different literals (mypy: comparison-overlap).
LOCK_OPTION: str = "{{ cookiecutter.lock_dependencies }}"
LOCK = LOCK_OPTION == "yes"
# cruft sets _commit; cookiecutter sets _repo_dir, the template's checkout (its HEAD is the commit).
CRUFT_COMMIT = "{{ cookiecutter.get('_commit', '') }}"
REPO_DIR = "{{ cookiecutter.get('_repo_dir', '') }}"
# Every answer, as cruft records them in .cruft.json (a raw string: JSON escapes every quote).
CONTEXT = json.loads(r"""{{ cookiecutter | jsonify }}""")
# Where this run of cookiecutter put things: not answers, and not the same on another machine.
RUN_ONLY = {"_output_dir", "_repo_dir", "_checkout"}
# cookiecutter's own short forms of a repository (cookiecutter/config.py), which git cannot clone.
ABBREVIATIONS = {
    "gh": "https://github.com/{0}.git",
    "gl": "https://gitlab.com/{0}.git",
    "bb": "https://bitbucket.org/{0}",
}
# jobs=none: the worker's package goes (a folder cannot be named conditionally as a file can).
JOBS_OPTION: str = "{{ cookiecutter.jobs }}"
PACKAGE = "{{ cookiecutter.package_name }}"
# Set by `make template-update` (scaffold/upkeep.py) for cruft's two renders of the template.
UPDATE_ENV = "TEMPLATE_UPDATE"


def lock_dependencies() -> str:
    uv = shutil.which("uv")
    if uv is None:
        return "uv not found here: `make install` writes uv.lock and requirements.lock.txt"
    result = subprocess.run([uv, "lock", "--quiet"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        # A lock is a convenience, not a requirement of the bake: say why it is missing.
        return f"uv lock failed, no uv.lock written: {result.stderr.strip().splitlines()[-1:]}"
    return f"uv.lock written, {export_lock_for_pip()}"


def export_lock_for_pip() -> str:
    """requirements.lock.txt: uv.lock's pins for pip, by the bake's `make pip-lock`, the one
    place that export is written."""
    make = shutil.which("make")
    if make is None:
        return "make not found: requirements.lock.txt not written (`make pip-lock`)"
    command = [make, "--no-print-directory", "--silent", "pip-lock"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return f"requirements.lock.txt not written: {result.stderr.strip().splitlines()[-1:]}"
    return "requirements.lock.txt written for pip"


def _git(folder: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *arguments], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def _template_url(top: Path) -> str:
    """What cruft clones: the repository as cookiecutter was given it, its short form expanded, a
    local folder made absolute (_template is relative to where cookiecutter ran, as PWD names)."""
    given = str(CONTEXT.get("_template") or "").removeprefix("git+")
    prefix, colon, rest = given.partition(":")
    if colon and prefix in ABBREVIATIONS:
        return ABBREVIATIONS[prefix].format(rest)
    if "://" in given or given.startswith("git@"):
        return given
    return str(top)


def link_to_template() -> str:
    """.cruft.json, as `cruft create` writes it: the template, the commit baked from and every
    answer, so that `cruft check`, `cruft update` and `make template-update` work from the first
    commit, with no `cruft link` and no answer typed twice. cruft writes its own (it sets
    _commit); a template that is not a git checkout (a zip file) has no commit to record."""
    if CRUFT_COMMIT or not REPO_DIR:
        return ""
    template = Path(os.environ.get("PWD", ""), REPO_DIR).resolve()
    checkout = (template / "cookiecutter.json").is_file()
    commit = _git(template, "rev-parse", "HEAD") if checkout else ""
    top = Path(_git(template, "rev-parse", "--show-toplevel") or template)
    if not commit:
        return "the template is not a git checkout: no .cruft.json (docs/upgrading.md)"
    answers = {key: value for key, value in CONTEXT.items() if key not in RUN_ONLY}
    url = _template_url(top)
    directory = str(template.relative_to(top)) if template != top else None
    record = {
        "template": url,
        "commit": commit,
        "checkout": CONTEXT.get("_checkout") or None,
        "context": {"cookiecutter": {**answers, "_template": url, "_commit": commit}},
        "directory": directory,
    }
    # cruft's own layout of the file (cruft/_commands/utils/cruft.py json_dumps).
    text = json.dumps(record, ensure_ascii=False, indent=2, separators=(",", ": "))
    Path(".cruft.json").write_text(text + "\n")
    return f".cruft.json records {url} at {commit[:12]}"


# Left for `make install` (its finish-bake step) when there is no ruff here to lay the code out.
LAYOUT_PENDING = ".layout-pending"


def format_sources() -> None:
    """Names chosen at bake time change line lengths: let ruff lay the code out once, here, or
    where there is no ruff (cookiecutter alone in its venv), at `make install`."""
    ruff = shutil.which("ruff")
    if ruff is None:
        if not os.environ.get(UPDATE_ENV):  # an update's renders have the project's ruff on PATH
            Path(LAYOUT_PENDING).write_text(
                "The bake had no ruff to lay its code out: `make install` does (make fmt), then "
                "removes this file.\n"
            )
            print("ruff not found here: `make install` lays the code out with it")
        return
    subprocess.run([ruff, "check", "--fix-only", "--quiet", "--no-cache", "."], check=False)
    subprocess.run([ruff, "format", "--quiet", "--no-cache", "."], check=False)


def write_chart_readme() -> None:
    """The chart's README is generated from its values.schema.json and values.yaml."""
    subprocess.run([sys.executable, "deploy/helm/chart_readme.py"], check=True)


def write_settings_table() -> None:
    """The README's settings table is generated from the Settings class (settings_table.py)."""
    subprocess.run([sys.executable, "settings_table.py"], check=True)


def generate_first_resource() -> None:
    """The first resource, rendered by the generator `make resource` runs (scaffold/)."""
    command = [
        sys.executable,
        "-m",
        "scaffold",
        "add",
        RESOURCE,
        RESOURCE_PLURAL,
        "--fields",
        FIELDS,
    ]
    done = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
    )
    # openapi.json needs the service's dependencies, which this Python may not have: `make install`
    # writes it then (the next steps say so), so the generator's line about it is not repeated.
    told = [line for line in done.stderr.splitlines() if not line.startswith("openapi.json not")]
    print(*told, sep="\n", file=sys.stderr, end="\n" if told else "")
    if done.returncode != 0:
        raise SystemExit(done.returncode)


def remove_unused_options() -> None:
    if JOBS_OPTION == "none":
        shutil.rmtree(Path("src", PACKAGE, "worker"))
        shutil.rmtree(Path("tests", "worker"))
        shutil.rmtree(Path("loadtest", "jobs"))
        Path("deploy", "helm", SLUG, "templates", "worker-deployment.yaml").unlink()


def main() -> int:
    remove_unused_options()
    generate_first_resource()
    format_sources()
    write_chart_readme()
    write_settings_table()
    if os.environ.get(UPDATE_ENV):
        # One of cruft's two renders for `make template-update`, which says what changed itself:
        # no next steps, and the project's own locks stay (cruft skips them).
        return 0
    linked = link_to_template()
    status = lock_dependencies() if LOCK else "lock_dependencies=no: uv.lock not written"
    print(f"Baked {SLUG} ({'; '.join(filter(None, [status, linked]))}). Next steps:")
    print(f"  cd {SLUG} && git init")
    # Without uv or the service's dependencies here, the locks and openapi.json are written then.
    print("  make install   # .venv with the service and its tools; the locks and openapi.json")
    print("                 # where the bake has none (commit them with the rest)")
    print("  make dev       # throwaway PostgreSQL, migrations, server with reload on :8000")
    print("  make test      # the test suite on a real PostgreSQL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
