"""A bake records its template, commit and answers (.cruft.json: by the hook for cookiecutter's
bakes, by cruft for its own), and takes later template changes as docs/upgrading.md says."""

import asyncio
import json
from pathlib import Path

import pytest

from .baking import GIT, VENV_BIN, git, git_copy_of_template, run
from .readme_way import bake_readme_way
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
    assert sorted(line.split()[-1] for line in changed) == [".cruft.json", "README.md"]


# The answers a user gives, where issue reports found the update's guide wanting: auth=api_key,
# jobs=postgres, a resource of their own with a unique first field and no integer one.
ANSWERS = {
    "project_name": "Shop Catalog",
    "auth": "api_key",
    "jobs": "postgres",
    "resource": "product",
    "resource_plural": "products",
    "fields": (
        "sku:str(32):unique:filter title:str(200):sort status:enum(draft|live|gone)=draft:filter"
        " due:date?:sort note:text?"
    ),
}


def test_a_bake_made_the_readmes_way_records_its_template_commit_and_every_answer(
    template_repo: Path, tmp_path: Path, readme_cookiecutter: Path
) -> None:
    """No `cruft link` with its thirteen prompts typed again: the bake's .cruft.json is what
    `cruft create` writes, the answers given with it, and the drift check reads it at once."""
    project = bake_readme_way(
        readme_cookiecutter, tmp_path / "out", **ANSWERS, template=template_repo
    )
    record = json.loads((project / ".cruft.json").read_text())
    assert record["template"] == str(template_repo)
    assert record["commit"] == git(template_repo, "rev-parse", "HEAD")
    answers = record["context"]["cookiecutter"]
    prompts = [key for key in json.loads((template_repo / "cookiecutter.json").read_text())
               if not key.startswith("_")]  # fmt: skip
    assert len(prompts) == 13
    assert {key: answers[key] for key in ANSWERS} == ANSWERS
    assert set(prompts) <= set(answers)
    assert not {"_output_dir", "_repo_dir", "_checkout"} & set(answers)
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "baked")
    checked = run(project, "make", "template-check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    readme = template_repo / "{{cookiecutter.project_slug}}" / "README.md"
    readme.write_text(readme.read_text() + "\nA line the template added later.\n")
    git(template_repo, "commit", "-qam", "template v2")
    assert run(project, "make", "template-check").returncode != 0


PACKAGE = Path("src/shop_catalog")
WEIGHT_MIGRATION = """\"\"\"Add weight_grams to products.

Revision ID: 0002
Revises: 0001
\"\"\"

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE products ADD COLUMN weight_grams integer")


def downgrade() -> None:
    op.execute("ALTER TABLE products DROP COLUMN weight_grams")
"""
JOBS_MIGRATION = """\"\"\"Create jobs: a machinery table the template adds after the bake (after
the job queue's, of jobs=postgres).

Revision ID: machinery_0003
Revises: machinery_0002
\"\"\"

from alembic import op

revision = "machinery_0003"
down_revision = "machinery_0002"
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
        project / PACKAGE / "products" / "schemas.py",
        "    note: Annotated[str | None, Text()] = None\n",
        "    note: Annotated[str | None, Text()] = None\n"
        "    weight_grams: Annotated[int | None, Int(ge=0)] = None\n",
    )
    _edit(project / PACKAGE / "products" / "schemas.py", "    Date,\n", "    Date,\n    Int,\n")
    versions = project / "migrations" / "versions"
    (versions / "0002_add_weight_grams_to_products.py").write_text(WEIGHT_MIGRATION)
    made = run(project, *make, "resource", "NAME=order", "FIELDS=code:str(32):unique total:money")
    assert made.returncode == 0, made.stdout + made.stderr
    assert run(project, *make, "openapi").returncode == 0  # the API changed: its document too
    _edit(
        project / "pyproject.toml",
        'addopts = "-ra --strict-markers"',
        'addopts = "-ra --strict-markers --durations=3"',
    )
    chart = project / "deploy" / "helm" / "shop-catalog"
    _edit(chart / "values.yaml", "replicaCount: 2\n", "replicaCount: 3\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a field, a resource, a setting, a value")


def _template_changes(template: Path) -> None:
    """The template moves on in its machinery: kit/, the chart, the Makefile, the scaffold's
    templates, and a migration of its own with its table's name among the scaffold's."""
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
    (bake / "migrations" / "machinery" / "0003_jobs.py").write_text(JOBS_MIGRATION)
    # Its table, a name a resource can no longer take (a bake test holds the two together).
    _edit(
        bake / "scaffold" / "names.py", "SERVICE_TABLES = {\n", 'SERVICE_TABLES = {\n    "jobs",\n'
    )
    git(template, "add", "-A")
    git(template, "commit", "-qm", "template v2")


async def _tables(url: str) -> set[str]:
    rows = await fetch(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {row["tablename"] for row in rows}


def _guide_commands(project: Path, section: str) -> list[str]:
    """The commands of the bake's docs/upgrading.md, section `section`, in order."""
    text = (project / "docs" / "upgrading.md").read_text()
    start = text.index(f"\n## {section}\n")
    block = text[start:].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.partition("#")[0].strip() for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_the_guides_update_brings_the_machinery_leaves_every_resource_alone_and_commits_whole(
    template_repo: Path, tmp_path: Path, postgres_url: str, readme_cookiecutter: Path
) -> None:
    """docs/upgrading.md typed as it is, on a bake made the README's way with the answers above:
    the bake's own .cruft.json (no `cruft link`), the update, `git diff --cached`, the commit,
    after which nothing is left unstaged and the project is current. The bake is committed
    without openapi.json, as one made by `cruft create` without the service's dependencies
    is: the update's test run needs it written."""
    project = bake_readme_way(
        readme_cookiecutter, tmp_path / "out", **ANSWERS, template=template_repo
    )
    make = ["make", "--no-print-directory", f"VENV={VENV_BIN.parent}"]
    assert run(project, *make, "finish-bake").returncode == 0  # `make install`'s last step
    (project / "openapi.json").unlink()
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "baked")
    _user_edits(project, make)
    (project / "openapi.json").unlink()
    git(project, "commit", "-qam", "no document")
    yours = _files(project, "src/shop_catalog/products", "src/shop_catalog/orders",
                   "tests/products", "tests/orders", "migrations/versions")  # fmt: skip
    pyproject = (project / "pyproject.toml").read_text()
    lock = (project / "uv.lock").read_text()
    _template_changes(template_repo)

    commands = _guide_commands(project, "Later")
    assert commands == [
        "make template-check",
        "make template-update",
        "git diff --cached",
        'git commit -m "Template update"',
    ]
    with migrated_database(project, postgres_url, "upgrade_before") as before:
        moved = run(project, *make, "template-check")
        assert moved.returncode != 0, moved.stdout + moved.stderr
        assert "out of date" in moved.stdout, moved.stdout + moved.stderr
        # Its `make test` is also the api_key x jobs option set's suite (test_generated_suites.py).
        updated = run(project, *make, "template-update", DATABASE_URL=postgres_url)
        assert updated.returncode == 0, updated.stdout[-5000:] + updated.stderr[-3000:]
        staged = run(project, "git", "diff", "--cached", "--name-only").stdout.split()
        committed = run(project, *GIT, "commit", "-m", "Template update")
        assert committed.returncode == 0, committed.stdout + committed.stderr
        migrated = run(project, "alembic", "upgrade", "heads", DATABASE_URL=before)
        assert migrated.returncode == 0, migrated.stderr
        # The machinery's migration applies on a database already at the user's own head.
        assert {"jobs", "products", "orders", "cursor_keys"} <= asyncio.run(_tables(before))

    # The update is committed whole: cruft's new record, the document written again, no file
    # left modified for the next update to refuse; and the project is current.
    assert git(project, "status", "--porcelain") == ""
    assert {".cruft.json", "openapi.json"} <= set(staged)
    assert json.loads((project / ".cruft.json").read_text())["commit"] == git(
        template_repo, "rev-parse", "HEAD"
    )
    assert run(project, *make, "template-check").returncode == 0
    # cruft's two renders ran the hook, which printed no next steps of a new bake.
    assert "Next steps" not in updated.stdout + updated.stderr
    # Every machinery change arrived...
    assert "added to kit/ later" in (project / PACKAGE / "kit" / "problems.py").read_text()
    chart = project / "deploy" / "helm" / "shop-catalog"
    assert "revisionHistoryLimit: 4" in (chart / "templates" / "deployment.yaml").read_text()
    assert "hello: ## A target" in (project / "Makefile").read_text()
    routes_template = project / "scaffold" / "templates" / "resource" / "routes.py.jinja"
    assert "added later" in routes_template.read_text()
    assert (project / "migrations" / "machinery" / "0003_jobs.py").read_text() == JOBS_MIGRATION
    # ...every user edit survived, and no resource file changed.
    assert "replicaCount: 3" in (chart / "values.yaml").read_text()
    assert (project / "pyproject.toml").read_text() == pyproject
    assert _files(project, "src/shop_catalog/products", "src/shop_catalog/orders",
                  "tests/products", "tests/orders", "migrations/versions") == yours  # fmt: skip
    # The lock is the project's (cruft skips it), locked again: the bounds did not move.
    assert (project / "uv.lock").read_text() == lock
    assert not list(project.rglob("*.rej"))
    assert run(project, "git", "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>) ").stdout == ""
    assert "Conflicts" not in updated.stdout
