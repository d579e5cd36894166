"""A project baked with cruft records its template and commit, and takes later template changes."""

import json
from pathlib import Path

import pytest

from .baking import git, git_copy_of_template, run


@pytest.fixture
def template_repo(tmp_path: Path) -> Path:
    return git_copy_of_template(tmp_path / "template")


def test_cruft_project_records_its_template_and_takes_an_update(
    template_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    created = run(
        tmp_path, "cruft", "create", str(template_repo), "--no-input", "--output-dir", str(out),
        "--extra-context", json.dumps({"lock_dependencies": "no"}),
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    project = out / "inventory-service"
    record = json.loads((project / ".cruft.json").read_text())
    assert record["template"] == str(template_repo)
    assert record["commit"] == git(template_repo, "rev-parse", "HEAD")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "baked")
    assert run(project, "cruft", "check").returncode == 0

    # The template moves on; the project has a change of its own.
    readme = template_repo / "{{cookiecutter.project_slug}}" / "README.md"
    readme.write_text(readme.read_text() + "\nA line the template added later.\n")
    git(template_repo, "commit", "-qam", "template v2")
    makefile = project / "Makefile"
    makefile.write_text(makefile.read_text() + "\n# a local target the team added\n")
    git(project, "commit", "-qam", "local change")
    assert run(project, "cruft", "check").returncode != 0

    updated = run(project, "cruft", "update", "--skip-apply-ask")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "A line the template added later." in (project / "README.md").read_text()
    assert "# a local target the team added" in makefile.read_text()
    assert json.loads((project / ".cruft.json").read_text())["commit"] == git(
        template_repo, "rev-parse", "HEAD"
    )
    assert run(project, "cruft", "check").returncode == 0
    changed = git(project, "status", "--porcelain").splitlines()
    assert sorted(line.split()[-1] for line in changed) == [".cruft.json", "README.md"]
