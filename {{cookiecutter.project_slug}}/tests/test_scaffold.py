"""scaffold/: the field spec's grammar, what each field becomes, and the names it refuses."""

import ast
import re
import shutil
import tomllib
from pathlib import Path

import asyncpg
import pytest
from scaffold.__main__ import main
from scaffold.generate import GenerateError, add_resource, remove_resource
from scaffold.names import (
    SERVICE_TABLES,
    SQL_RESERVED,
    SQL_TYPE_NAMES,
    name_length_problems,
    resource_name_problems,
)
from scaffold.revision import add_field
from scaffold.spec import SpecError, parse

ROOT = Path(__file__).resolve().parents[1]
EVERY_TYPE = (
    "sku:str(32):unique note:text? body_text:text(500) qty:int(>=0,<=10)=1 big:bigint(>=-5)?"
    " price:money active:bool=true kind:enum(a|b)=a due:date? at:timestamp? ref:uuid:unique"
)


def test_filter_and_sort_flags_mark_the_field_and_index_it() -> None:
    fields = {field.name: field for field in parse("at:timestamp?:filter:sort k:enum(a|b):filter")}
    assert fields["at"].annotation == (
        "Annotated[datetime | None, Timestamp(), Filterable(), Sortable()]"
    )
    assert fields["at"].kit_names == {"Timestamp", "Filterable", "Sortable"}
    assert fields["k"].annotation == 'Annotated[Literal["a", "b"], OneOf(), Filterable()]'
    assert fields["k"].indexed
    assert not parse("plain:int")[0].indexed


def test_every_type_becomes_its_annotation_and_its_column() -> None:
    fields = {field.name: field for field in parse(EVERY_TYPE)}
    assert fields["sku"].annotation == "Annotated[str, Str(max_length=32), Unique()]"
    assert fields["sku"].column == "sku varchar(32) NOT NULL CHECK (char_length(sku) >= 1)"
    assert fields["note"].annotation == "Annotated[str | None, Text()]"
    assert fields["note"].python_default == "None"
    assert fields["qty"].column == (
        "qty integer NOT NULL DEFAULT 1 CHECK (qty >= 0) CHECK (qty <= 10)"
    )
    assert fields["big"].annotation == "Annotated[int | None, BigInt(ge=-5)]"
    assert fields["price"].annotation == "Annotated[int, Money()]"
    assert fields["price"].column == "price bigint NOT NULL CHECK (price >= 0)"
    assert fields["active"].python_default == "True"
    assert fields["kind"].annotation == 'Annotated[Literal["a", "b"], OneOf()]'
    assert fields["kind"].column == "kind text NOT NULL DEFAULT 'a' CHECK (kind IN ('a', 'b'))"
    assert fields["at"].sql_type == "timestamptz"
    assert fields["ref"].annotation == "Annotated[UUID, Uuid(), Unique()]"
    assert [name for name, field in fields.items() if field.required] == [
        "sku",
        "body_text",
        "price",
        "ref",
    ]


def test_a_default_with_a_single_quote_is_written_as_python_and_sql_that_read_it_back() -> None:
    (field,) = parse("motto:str(40)=it's,ok")
    assert field.python_default is not None
    assert ast.literal_eval(field.python_default) == "it's,ok"
    assert field.sql_default == "'it''s,ok'"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("name:str", "name: str needs its length"),
        ("id:int", "id: is a reserved word"),
        ("order:int", "order: is a reserved word"),
        ("Price:int", "Price: a field name is snake_case"),
        ("price:float", "price: unknown type 'float'"),
        ("qty:int(>=5,<=1)", "qty: bounds >=5,<=1 admit no value"),
        ("qty:int(>=3000000000)", "qty: bound 3000000000 is outside int"),
        ("qty:int=x", "qty: default 'x' is not an integer"),
        ("qty:int(>=0)=-1", "qty: default -1 is outside its bounds"),
        ("shown:bool:unique", "shown: a bool cannot be unique"),
        ("kind:enum(a|a)", "kind: enum lists a value twice"),
        ("kind:enum(a|b)=c", "kind: default 'c' is not one of a|b"),
        ("at:timestamp=now", "at: a timestamp takes no default"),
        ("sku:str(8):indexed", "sku: unknown flag 'indexed'"),
        ("sku:str(8):sorted", "sku: unknown flag 'sorted'"),
        ("sort:int:sort", "sort: is a reserved word"),
        ("cursor:str(8)", "cursor: is a reserved word"),
        ("a:int a:int", "a: declared twice"),
        ("", "the spec declares no field"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_field(spec: str, message: str) -> None:
    with pytest.raises(SpecError) as refused:
        parse(spec)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("singular", "plural", "message"),
    [
        ("order", "orders", None),
        ("LineItem", "line_items", "resource 'LineItem' is not snake_case"),
        ("entry", "select", "resource_plural 'select' is an SQL key word"),
        ("lefty", "left", "resource_plural 'left' is an SQL key word"),
        ("value", "values", "resource_plural 'values' names the table's row type, a name"),
        ("txt", "text", "resource_plural 'text' names the table's row type, a name"),
        ("entry", "pg_entries", "resource_plural 'pg_entries' names the table's row type"),
        ("cursor_key", "cursor_keys", "resource_plural 'cursor_keys' is a table of the service's"),
        ("entry", "e" * 55, "names the table: at most 54 characters"),
        ("entry", "e" * 54, None),
        ("kit", "kits", "resource 'kit' is a reserved word"),
        ("item", "item", "must differ from resource"),
    ],
)
def test_resource_names_are_checked(singular: str, plural: str, message: str | None) -> None:
    problems = resource_name_problems(singular, plural)
    assert (problems == []) if message is None else any(message in line for line in problems)


async def test_every_name_postgresql_takes_is_refused(
    connection: asyncpg.Connection,
) -> None:
    reserved = await connection.fetch(
        "SELECT word FROM pg_get_keywords() WHERE catcode IN ('R', 'T')"
    )
    assert {row["word"] for row in reserved} <= SQL_RESERVED
    # A type's name: a key word of category C, or a built-in type's (not an array's, `_int4`).
    types = await connection.fetch(
        "SELECT word FROM pg_get_keywords() WHERE catcode = 'C'"
        " UNION SELECT typname FROM pg_type"
        " WHERE typnamespace = 'pg_catalog'::regnamespace AND typname !~ '^(_|pg_)'"
    )
    assert {row["word"] for row in types} <= SQL_TYPE_NAMES


def test_the_tables_and_types_of_the_service_s_own_are_refused_as_plurals() -> None:
    made = {"alembic_version"}
    for path in (ROOT / "migrations" / "machinery").glob("*.py"):
        made |= set(re.findall(r"CREATE (?:TABLE|TYPE) (\w+)", path.read_text()))
    assert {"idempotency_keys", "cursor_keys"} < made <= SERVICE_TABLES


def test_a_field_is_refused_where_its_index_name_would_pass_what_postgresql_keeps() -> None:
    longest = "f" * (63 - len("items__id_idx"))
    assert name_length_problems("items", [longest]) == []
    (problem,) = name_length_problems("items", [longest + "f"])
    assert problem.startswith(f"{longest}f: its index items_{longest}f_id_idx would be 64")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of this project's files the generator edits (sources, migrations, README, the
    skip list of template updates in pyproject.toml)."""
    for part in ("src", "migrations", "README.md", "pyproject.toml"):
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tmp_path / part)
    return tmp_path


def test_add_then_remove_leaves_a_migration_each_and_the_lists_as_before(project: Path) -> None:
    (package,) = [path.parent.name for path in (project / "src").glob("*/__init__.py")]
    resources = project / "src" / package / "serving" / "resources.py"
    before = resources.read_text()
    heads = sorted((project / "migrations" / "versions").glob("*.py"))
    pyproject = project / "pyproject.toml"
    skipped_before = pyproject.read_text()
    add_resource(project, "widget_part", "widget_parts", "code:str(16):unique")
    assert "widget_parts," in resources.read_text()
    assert "### widget_parts" in (project / "README.md").read_text()
    schemas = (project / "src" / package / "widget_parts" / "schemas.py").read_text()
    assert "code: Annotated[str, Str(max_length=16), Unique()]" in schemas
    skipped = tomllib.loads(pyproject.read_text())["tool"]["cruft"]["skip"]
    assert {f"src/{package}/widget_parts", "tests/widget_parts"} <= set(skipped)
    remove_resource(project, "widget_parts")
    assert resources.read_text() == before
    assert pyproject.read_text() == skipped_before
    assert "widget_parts" not in (project / "README.md").read_text()
    created, dropped = sorted((project / "migrations" / "versions").glob("*.py"))[len(heads) :]
    assert "CREATE TABLE widget_parts" in created.read_text()
    assert 'down_revision = "' + created.name.split("_")[0] + '"' in dropped.read_text()
    assert "DROP TABLE IF EXISTS widget_parts" in dropped.read_text()


def test_an_existing_resource_is_not_overwritten(project: Path) -> None:
    add_resource(project, "widget_part", "widget_parts", "code:str(16)")
    with pytest.raises(GenerateError, match="exists already"):
        add_resource(project, "widget_part", "widget_parts", "code:str(16)")


def test_removing_the_last_resource_is_refused_with_one_line_and_touches_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (package,) = [path.parent.name for path in (project / "src").glob("*/__init__.py")]
    resources = project / "src" / package / "serving" / "resources.py"
    listed = resources.read_text().partition("\nRESOURCES")[2].partition("\n]")[0]
    registered = [line.strip().rstrip(",") for line in listed.splitlines()[1:] if line.strip()]
    for plural in registered[1:]:  # a project with more than one resource: down to its first
        remove_resource(project, plural)
    (last,) = registered[:1]
    before = sorted(path.relative_to(project) for path in project.rglob("*"))
    assert main(["--root", str(project), "remove", last]) == 2
    error = capsys.readouterr().err
    assert error.splitlines() == [
        f"ERROR: {last} is the last resource: add the one that replaces it first (make resource)"
    ]
    assert sorted(path.relative_to(project) for path in project.rglob("*")) == before


def test_make_resource_and_make_field_refuse_a_name_postgresql_would_cut(project: Path) -> None:
    (package,) = [path.parent.name for path in (project / "src").glob("*/__init__.py")]
    before = sorted(path.relative_to(project) for path in project.rglob("*"))
    too_long = "f" * (63 - len("widget_parts__id_idx") + 1)
    with pytest.raises(GenerateError, match=f"{too_long}: its index widget_parts_{too_long}_id"):
        add_resource(project, "widget_part", "widget_parts", f"code:str(16) {too_long}:int?")
    plural = next(path.parent.name for path in (project / "src" / package).glob("*/schemas.py"))
    with pytest.raises(GenerateError, match="would be 64 characters"):
        add_field(project, plural, "g" * (63 - len(f"{plural}__id_idx") + 1) + ":int?")
    assert sorted(path.relative_to(project) for path in project.rglob("*")) == before
