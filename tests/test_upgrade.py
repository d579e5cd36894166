"""A project baked with cruft records its template and commit, and takes later template changes."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from .baking import TEMPLATE, run

GIT = ["git", "-c", "user.name=Template Test", "-c", "user.email=test@example.com"]


def _git(folder: Path, *args: str) -> str:
    result = subprocess.run([*GIT, *args], cwd=folder, capture_output=True, text=True, check=True)
    return result.stdout.strip()


@pytest.fixture
def template_repo(tmp_path: Path) -> Path:
    """A git copy of the template as it is on disk (committed or not)."""
    files = _git(TEMPLATE, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    copy = tmp_path / "template"
    for name in filter(None, files):
        source = TEMPLATE / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-qm", "template v1")
    return copy


def test_cruft_project_records_its_template_and_takes_an_update(template_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    created = run(
        tmp_path, "cruft", "create", str(template_repo), "--no-input", "--output-dir", str(out),
        "--extra-context", json.dumps({"lock_dependencies": "no"}),
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    project = out / "inventory-service"
    record = json.loads((project / ".cruft.json").read_text())
    assert record["template"] == str(template_repo)
    assert record["commit"] == _git(template_repo, "rev-parse", "HEAD")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "baked")
    assert run(project, "cruft", "check").returncode == 0

    # The template moves on; the project has a change of its own.
    readme = template_repo / "{{cookiecutter.project_slug}}" / "README.md"
    readme.write_text(readme.read_text() + "\nA line the template added later.\n")
    _git(template_repo, "commit", "-qam", "template v2")
    makefile = project / "Makefile"
    makefile.write_text(makefile.read_text() + "\n# a local target the team added\n")
    _git(project, "commit", "-qam", "local change")
    assert run(project, "cruft", "check").returncode != 0

    updated = run(project, "cruft", "update", "--skip-apply-ask")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "A line the template added later." in (project / "README.md").read_text()
    assert "# a local target the team added" in makefile.read_text()
    assert json.loads((project / ".cruft.json").read_text())["commit"] == _git(template_repo, "rev-parse", "HEAD")
    assert run(project, "cruft", "check").returncode == 0
    changed = _git(project, "status", "--porcelain").splitlines()
    assert sorted(line.split()[-1] for line in changed) == [".cruft.json", "README.md"]
