"""A project baked with cruft records its template and commit, and takes later template changes."""

import asyncio
import json
from pathlib import Path

import pytest

from .baking import VENV_BIN, git, git_copy_of_template, run
from .serving import fetch, migrated_database


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
    assert sorted(line.split()[-1] for line in changed) == [
        ".cruft.json",
        ".template-commit",
        "README.md",
    ]


PACKAGE = Path("src/inventory_service")
NOTE_MIGRATION = """\"\"\"Add note to items.

Revision ID: 0002
Revises: 0001
\"\"\"

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE items ADD COLUMN note text CHECK (char_length(note) <= 500)")


def downgrade() -> None:
    op.execute("ALTER TABLE items DROP COLUMN note")
"""
JOBS_MIGRATION = """\"\"\"Create jobs: a machinery table the template adds after the bake.

Revision ID: machinery_0002
Revises: machinery_0001
\"\"\"

from alembic import op

revision = "machinery_0002"
down_revision = "machinery_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE TABLE jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY)")


def downgrade() -> None:
    op.execute("DROP TABLE jobs")
"""


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _files(project: Path, *folders: str) -> dict[str, str]:
    return {
        str(path.relative_to(project)): path.read_text()
        for folder in folders
        for path in sorted((project / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _user_edits(project: Path, make: list[str]) -> None:
    """What a team does first: a field on the first resource (its line and its migration), a
    second resource with `make resource`, a pytest setting, a chart value."""
    _edit(
        project / PACKAGE / "items" / "schemas.py",
        "    quantity: Annotated[int, Int(ge=0)] = 0\n",
        "    quantity: Annotated[int, Int(ge=0)] = 0\n"
        "    note: Annotated[str | None, Text(max_length=500)] = None\n",
    )
    (project / "migrations" / "versions" / "0002_add_note_to_items.py").write_text(NOTE_MIGRATION)
    made = run(project, *make, "resource", "NAME=order", "FIELDS=sku:str(32):unique total:money")
    assert made.returncode == 0, made.stdout + made.stderr
    _edit(
        project / "pyproject.toml",
        'addopts = "-ra --strict-markers"',
        'addopts = "-ra --strict-markers --durations=3"',
    )
    chart = project / "deploy" / "helm" / "inventory-service"
    _edit(chart / "values.yaml", "replicaCount: 2\n", "replicaCount: 3\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a field, a resource, a setting, a value")


def _template_changes(template: Path) -> None:
    """The template moves on in its machinery: kit/, the chart, the Makefile, the scaffold's
    templates, and a migration of its own."""
    bake = template / "{{cookiecutter.project_slug}}"
    _edit(
        bake / "src" / "{{cookiecutter.package_name}}" / "kit" / "problems.py",
        'RETRY_AFTER_SECONDS = "1"\n',
        'RETRY_AFTER_SECONDS = "1"\n# A line the template added to kit/ later.\n',
    )
    _edit(
        bake
        / "deploy"
        / "helm"
        / "{{cookiecutter.project_slug}}"
        / "templates"
        / "deployment.yaml",
        "  revisionHistoryLimit: 5\n",
        "  revisionHistoryLimit: 4\n",
    )
    _edit(
        bake / "Makefile",
        "clean: ## Remove the dev database and caches\n",
        "hello: ## A target the template added later\n\t@echo hello\n\n"
        "clean: ## Remove the dev database and caches\n",
    )
    _edit(
        bake / "scaffold" / "templates" / "resource" / "routes.py.jinja",
        "\n\n@router.post(\n",
        "\n\n# A line the scaffold added later.\n@router.post(\n",
    )
    (bake / "migrations" / "machinery" / "0002_jobs.py").write_text(JOBS_MIGRATION)
    git(template, "add", "-A")
    git(template, "commit", "-qm", "template v2")


async def _tables(url: str) -> set[str]:
    rows = await fetch(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {row["tablename"] for row in rows}


@pytest.mark.slow
def test_make_template_update_brings_the_machinery_and_leaves_every_resource_alone(
    template_repo: Path, tmp_path: Path, postgres_url: str
) -> None:
    out = tmp_path / "out"
    created = run(
        tmp_path, "cruft", "create", str(template_repo), "--no-input", "--output-dir", str(out),
        "--extra-context", json.dumps({"lock_dependencies": "no"}),
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    project = out / "inventory-service"
    assert (project / ".template-commit").read_text().strip() == git(
        template_repo, "rev-parse", "HEAD"
    )
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "baked")
    make = ["make", f"VENV={VENV_BIN.parent}"]
    _user_edits(project, make)
    yours = _files(project, "src/inventory_service/items", "src/inventory_service/orders",
                   "tests/items", "tests/orders", "migrations/versions")  # fmt: skip
    pyproject = (project / "pyproject.toml").read_text()
    _template_changes(template_repo)

    with migrated_database(project, postgres_url, "upgrade_before") as before:
        updated = run(project, *make, "template-update", DATABASE_URL=postgres_url)
        assert updated.returncode == 0, updated.stdout[-5000:] + updated.stderr[-3000:]
        migrated = run(project, "alembic", "upgrade", "heads", DATABASE_URL=before)
        assert migrated.returncode == 0, migrated.stderr
        # The machinery's migration applies on a database already at the user's own head.
        assert {"jobs", "items", "orders", "cursor_keys"} <= asyncio.run(_tables(before))

    # Every machinery change arrived...
    assert "added to kit/ later" in (project / PACKAGE / "kit" / "problems.py").read_text()
    chart = project / "deploy" / "helm" / "inventory-service"
    assert "revisionHistoryLimit: 4" in (chart / "templates" / "deployment.yaml").read_text()
    assert "hello: ## A target" in (project / "Makefile").read_text()
    routes_template = project / "scaffold" / "templates" / "resource" / "routes.py.jinja"
    assert "added later" in routes_template.read_text()
    assert (project / "migrations" / "machinery" / "0002_jobs.py").read_text() == JOBS_MIGRATION
    # ...every user edit survived, and no resource file changed.
    assert "replicaCount: 3" in (chart / "values.yaml").read_text()
    assert (project / "pyproject.toml").read_text() == pyproject
    assert _files(project, "src/inventory_service/items", "src/inventory_service/orders",
                  "tests/items", "tests/orders", "migrations/versions") == yours  # fmt: skip
    assert not (project / "uv.lock").exists()
    assert not list(project.rglob("*.rej"))
    assert run(project, "git", "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>) ").stdout == ""
    assert "Conflicts" not in updated.stdout
