"""The bake's schema guide (docs/changing-the-schema.md) followed as a user follows it, on a fresh
bake: its commands typed in its order, its code put where it says, its prose edits made, and at
every step `make lint` and the suite judge the result. A database migrated release after release
stands for the one in production. Then `make lint` on a revision the guide warns of, and the
guide's hazard table against what squawk says of each statement."""

import asyncio
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from .baking import PYTEST, VENV_BIN, bake, run, tool_env
from .serving import fetch, scratch_database
from .test_guides import _section

pytestmark = pytest.mark.slow

PLURAL = "items"
# What `make test` stands for at each step: the suite's parts that a schema change reaches (the
# drift test, the resource's own tests, openapi.json, the floors); the whole suite runs elsewhere.
SUITE = ("tests/test_drift.py", f"tests/{PLURAL}", "tests/test_openapi_document.py",
         "tests/test_architecture.py")  # fmt: skip
_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)


class Follower:
    """Types a guide's commands in a bake: `make` against the deployed database, `make test`
    as the suite's parts on a database of their own, a revision's code into the newest one."""

    def __init__(self, project: Path, deployed: str, postgres_url: str) -> None:
        self.project, self.deployed, self.postgres_url = project, deployed, postgres_url
        self.newest: Path | None = None  # the revision `make revision` wrote last

    @property
    def schemas(self) -> Path:
        return self.project / "src" / "inventory_service" / PLURAL / "schemas.py"

    def command(self, line: str) -> None:
        if line == "make test":
            done = run(self.project, *PYTEST, *SUITE, DATABASE_URL=self.postgres_url, timeout=1200)
            assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
            return
        assert line.startswith("make "), line
        done = subprocess.run(
            f"{line} VENV={VENV_BIN.parent}",
            shell=True,
            cwd=self.project,
            env=tool_env(self.project, DATABASE_URL=self.deployed),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, f"{line}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        if line.startswith("make revision "):
            self.newest = Path(done.stdout.strip().splitlines()[-1])

    def fill(self, code: str) -> None:
        """The newest revision's upgrade() and downgrade(): the guide's, as it shows them."""
        assert self.newest is not None, "no `make revision` before the code to put in it"
        text = self.newest.read_text()
        kept = "" if "def downgrade" in code else "\n\n" + text[text.index("def downgrade") :]
        self.newest.write_text(text[: text.index("def upgrade() -> None:")] + code + kept)

    def retire(self, field: str) -> None:
        """Take `field`'s line out of the declaration and name it in `retired_fields`."""
        text = self.schemas.read_text()
        line = re.search(rf"^    {field}: .*\n", text, re.MULTILINE)
        assert line is not None, f"{field} is not declared"
        text = text[: line.start()] + text[line.end() :]
        opening = text.index('    """\n', text.index("class ItemFields(Declared):")) + 8
        self.schemas.write_text(
            f'{text[:opening]}\n    retired_fields = ("{field}",)\n{text[opening:]}'
        )

    def unretire_all(self) -> None:
        text = self.schemas.read_text()
        self.schemas.write_text(re.sub(r"\n    retired_fields = .*\n", "", text))

    def follow(self, section: str, *, before: dict[str, str] | None = None) -> None:
        """Every fenced block of `section`, in order; `before` maps the start of a command to a
        prose edit the guide asks for just before it ("retire:<field>" or "unretire")."""
        for _, language, body in _FENCE.findall(section):
            if language == "sh":
                for line in filter(None, body.strip().splitlines()):
                    for start, edit in (before or {}).items():
                        if line.startswith(start):
                            self.edit(edit)
                    self.command(line.strip())
            elif language == "python" and body.lstrip().startswith("class "):
                (field,) = re.findall(r'retired_fields = \("(\w+)",\)', body)
                self.retire(field)
            elif language == "python" and "DROP NOT NULL" in body:
                continue  # for a field NOT NULL without a default: `color` is optional
            elif language == "python" and "def upgrade() -> None:" in body:
                self.fill(textwrap.dedent(body))

    def edit(self, edit: str) -> None:
        kind, _, field = edit.partition(":")
        self.retire(field) if kind == "retire" else self.unretire_all()


def test_the_schema_guide_followed_step_by_step_keeps_lint_and_suite_green_at_every_step(
    tmp_path: Path, postgres_url: str
) -> None:
    project = bake(tmp_path)
    guide = project / "docs" / "changing-the-schema.md"
    with scratch_database(postgres_url, "guide_schema_deployed") as deployed:
        follower = Follower(project, deployed, postgres_url)
        follower.command("make migrate")  # release 0, deployed
        follower.follow(_section(guide, "Add a field to a resource in use"))
        follower.follow(_section(guide, "Write a revision yourself"))
        # Remove `color`: retired (release 1), then dropped (release 2, its name out again).
        follower.follow(_section(guide, "Remove a field"), before={"make revision": "unretire"})
        columns = f"SELECT attname FROM pg_attribute WHERE attrelid = '{PLURAL}'::regclass"
        assert "color" not in {row[0] for row in asyncio.run(fetch(deployed, columns))}
        # Rename `note` to `remark`: release 2 retires `note` (carried over), release 3 drops it.
        rename = {"make openapi": "retire:note", 'make revision MESSAGE="drop note': "unretire"}
        follower.follow(_section(guide, "Rename a field"), before=rename)
        assert "note" not in {row[0] for row in asyncio.run(fetch(deployed, columns))}


def test_the_rename_carries_over_what_the_previous_releases_pods_write_to_the_old_field(
    tmp_path: Path, postgres_url: str
) -> None:
    """Releases 1 and 2 of the guide's rename migrated, then writes as release 1's pods make them
    (both fields named, `remark` null when not sent) and as release 2's do (`remark` alone)."""
    project = bake(tmp_path)
    guide = project / "docs" / "changing-the-schema.md"
    releases = _section(guide, "Rename a field").split("**Release 3")[0]
    with scratch_database(postgres_url, "guide_schema_rename") as deployed:
        follower = Follower(project, deployed, postgres_url)
        follower.command('make field PLURAL=items FIELD="note:text(500)?"')
        follower.follow(releases.replace("make lint\nmake test\n", ""),
                        before={"make openapi": "retire:note"})  # fmt: skip
        both = f"INSERT INTO {PLURAL} (name, price_cents, note, remark) VALUES ('n', 1, $1, $2)"
        asyncio.run(fetch(deployed, both, "old pod", None))
        asyncio.run(fetch(deployed, both, "old pod", "sent too"))
        remark = f"INSERT INTO {PLURAL} (name, price_cents, remark) VALUES ('n', 1, $1)"
        asyncio.run(fetch(deployed, remark, "new pod"))
        first = f"(SELECT min(id) FROM {PLURAL})"
        old_update = f"UPDATE {PLURAL} SET note = 'changed', remark = remark WHERE id = {first}"
        asyncio.run(fetch(deployed, old_update))
        rows = asyncio.run(fetch(deployed, f"SELECT note, remark FROM {PLURAL} ORDER BY id"))
        assert [(row["note"], row["remark"]) for row in rows] == [
            ("changed", "changed"),
            ("old pod", "sent too"),
            (None, "new pod"),
        ]


def test_make_lint_fails_naming_the_rule_on_a_plain_index_of_a_table_that_exists(
    tmp_path: Path,
) -> None:
    """Every generated revision passes (the first resource's, `make resource`, `make field`, `make
    resource-remove`); a revision with `CREATE INDEX` on a table that exists does not."""
    project = bake(tmp_path)
    follower = Follower(project, "postgresql://unused", "postgresql://unused")
    follower.command('make resource NAME=order FIELDS="total:money:sort ref:uuid?"')
    follower.command('make field PLURAL=items FIELD="color:str(20)?:filter"')
    follower.command("make resource-remove PLURAL=orders")
    follower.command("make lint")
    follower.command('make revision MESSAGE="index name of items"')
    follower.fill(
        "def upgrade() -> None:\n"
        '    op.execute("CREATE INDEX items_name_idx ON items (name)")\n\n\n'
        "def downgrade() -> None:\n"
        '    op.execute("DROP INDEX items_name_idx")\n'
    )
    done = run(project, "make", "lint", f"VENV={VENV_BIN.parent}")
    assert done.returncode != 0
    assert "require-concurrent-index-creation" in done.stdout + done.stderr
    assert "index_name_of_items.sql" in done.stdout + done.stderr


# The hazard table: each row's statement, as squawk is given it (the table exists already).
_ROW = re.compile(
    r"^\| `(?P<wrote>[^`]+)`[^|]*\| `(?P<rule>[a-z-]+)`: (?P<message>[^|]+?) \|", re.M
)
STATEMENTS = {
    "CREATE INDEX ... ON <existing table>": "CREATE INDEX items_name_idx ON items (name)",
    "ADD CONSTRAINT ... CHECK (...)": "ALTER TABLE items ADD CONSTRAINT c CHECK (price_cents < 9)",
    "ADD COLUMN ... NOT NULL": "ALTER TABLE items ADD COLUMN sku text NOT NULL",
    "ALTER COLUMN ... SET NOT NULL": "ALTER TABLE items ALTER COLUMN description SET NOT NULL",
    "ADD CONSTRAINT ... UNIQUE (...)": "ALTER TABLE items ADD CONSTRAINT k UNIQUE (name)",
    "ALTER COLUMN ... TYPE ...": "ALTER TABLE items ALTER COLUMN name TYPE text",
    "RENAME COLUMN": "ALTER TABLE items RENAME COLUMN name TO title",
    "DROP COLUMN": "ALTER TABLE items DROP COLUMN description",
    "ALTER COLUMN ... DROP NOT NULL": "ALTER TABLE items ALTER COLUMN name DROP NOT NULL",
    "DROP TABLE": "DROP TABLE items",
    "DROP FUNCTION": "DROP FUNCTION items_remark_from_note()",
}


def test_the_guides_hazard_table_says_what_squawk_says_of_each_statement(tmp_path: Path) -> None:
    project = bake(tmp_path)
    rows = list(_ROW.finditer(_section(project / "docs" / "changing-the-schema.md",
                                       "What the linter says")))  # fmt: skip
    assert {row["wrote"] for row in rows} == set(STATEMENTS)
    for row in rows:
        sql = tmp_path / "statement.sql"
        sql.write_text(
            "SET lock_timeout = 50;\nSET statement_timeout = 60000;\nBEGIN;\n"
            f"{STATEMENTS[row['wrote']]};\nCOMMIT;\n"
        )
        said = run(project, str(VENV_BIN / "squawk"), "--config", ".squawk.toml",
                   "--reporter", "gcc", str(sql))  # fmt: skip
        assert f"warning: {row['rule']} {row['message']}" in said.stdout, said.stdout
