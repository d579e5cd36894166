"""Finish the baked project: lock dependencies when uv is present (uv.lock, and its pins for pip
in requirements.lock.txt) and print the next steps."""

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
# jobs=none: the worker's package goes (a folder cannot be named conditionally as a file can).
JOBS_OPTION: str = "{{ cookiecutter.jobs }}"
PACKAGE = "{{ cookiecutter.package_name }}"
# Set by `make template-update` (scaffold/upkeep.py) for cruft's two renders of the template.
UPDATE_ENV = "TEMPLATE_UPDATE"


def lock_dependencies() -> str:
    uv = shutil.which("uv")
    if uv is None:
        return (
            "uv not found: no lock written, `make install` takes pyproject.toml's ranges; "
            "`make lock` with uv writes uv.lock and requirements.lock.txt"
        )
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


def record_template_commit() -> None:
    """.template-commit: the template commit baked from, for `cruft link --checkout` later."""
    commit = CRUFT_COMMIT
    # _repo_dir is as given to cookiecutter: relative to where it ran (PWD), not to this folder.
    template = Path(os.environ.get("PWD", ""), REPO_DIR) if REPO_DIR else None
    if not commit and template is not None and (template / "cookiecutter.json").is_file():
        head = subprocess.run(
            ["git", "-C", str(template), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
        commit = head.stdout.strip() if head.returncode == 0 else ""
    if commit:
        Path(".template-commit").write_text(commit + "\n")


def format_sources() -> None:
    """Names chosen at bake time change line lengths: let ruff lay the code out once, here."""
    ruff = shutil.which("ruff")
    if ruff is None:
        # The template is laid out as ruff lays out the default names (a template test checks
        # it); other names can shift line lengths, which `make fmt` settles.
        print(
            "ruff not found: sources left in the template's layout; `make fmt` after `make install`"
        )
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
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


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
    record_template_commit()
    if os.environ.get(UPDATE_ENV):
        # A render for a template update: the project's own locks stay (cruft skips them); a
        # lock made here would only differ by what was released since the bake.
        status = "a template update's render: no lock written"
    else:
        status = lock_dependencies() if LOCK else "lock_dependencies=no: uv.lock not written"
    print(f"Baked {SLUG} ({status}). Next steps:")
    print(f"  cd {SLUG}")
    print("  make install   # virtualenv with the service and its dev tools")
    if not Path("openapi.json").is_file():
        # Written from the app by the generator when this Python has the service's dependencies.
        print("  make openapi   # openapi.json from the app's document (commit it)")
    print("  make dev       # throwaway PostgreSQL, migrations, server with reload on :8000")
    print("  make test      # the test suite on a real PostgreSQL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
