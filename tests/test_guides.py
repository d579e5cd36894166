"""The bake's guides followed as a user follows them, in order, on a fresh bake: the code they show
is taken from the baked guide itself and put where the guide says, then the bake's own tests judge
the result (issue 42: a guide that turns the suite red, or a recipe the drift test refuses)."""

import asyncio
import hashlib
import re
import sys
import textwrap
from pathlib import Path

from .baking import PYTEST, VENV_BIN, bake, run
from .serving import fetch, scratch_database

_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)


def _section(guide: Path, title: str) -> str:
    """The text of the guide's section `title` (a `## ` heading), up to the next one."""
    text = guide.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of `language` in `text`, in order, without their indentation."""
    return [
        textwrap.dedent(textwrap.indent(body, indent))
        for indent, lang, body in _FENCE.findall(text)
        if lang == language
    ]


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path}: no {old!r}"
    path.write_text(text.replace(old, new, 1))


def _make(project: Path, *arguments: str) -> None:
    done = run(project, "make", *arguments, f"VENV={VENV_BIN.parent}")
    assert done.returncode == 0, f"make {arguments}: {done.stdout[-2000:]}{done.stderr[-2000:]}"


def test_adding_a_guard_as_the_guide_says_keeps_the_suite_green_and_refuses_a_request_without_it(
    tmp_path: Path, postgres_url: str
) -> None:
    project = bake(tmp_path)
    package = project / "src" / "inventory_service"
    guard = _section(project / "docs" / "adding-a-resource.md", "Adding a guard")
    module, setting, fixtures, guard_test = _blocks(guard, "python")
    # The guard's module, where its first line says.
    where, _, code = module.partition("\n")
    (project / where.removeprefix("# ")).write_text(code)
    # The setting, in the Settings class; then the README's table, as the guide says.
    _replace(
        package / "settings.py",
        '    model_config = SettingsConfigDict(frozen=True, extra="ignore")\n',
        '    model_config = SettingsConfigDict(frozen=True, extra="ignore")\n\n'
        + textwrap.indent(setting, "    "),  # a field of the class
    )
    _make(project, "settings-readme")
    # On every route of every resource: READ and WRITE of kit/__init__.py.
    face = package / "kit" / "__init__.py"
    _replace(
        face,
        "from .url_params import RowId\n",
        "from .tokens import require_token\nfrom .url_params import RowId\n",
    )
    _replace(face, "\nfrom fastapi", "\nfrom fastapi import Depends\nfrom fastapi")
    for role in ("READ", "WRITE"):
        _replace(
            face,
            f"{role}: list[params.Depends] = []",
            f"{role}: list[params.Depends] = [Depends(require_token)]",
        )
    # The tests' credentials, and the guard's own test.
    conftest = project / "tests" / "conftest.py"
    text = conftest.read_text()
    start = text.index('@pytest.fixture(scope="session")\ndef auth_settings()')
    end = text.index('@pytest.fixture(scope="session")\ndef auth_env(')
    conftest.write_text(text[:start] + fixtures + "\n\n" + text[end:])
    where, _, code = guard_test.partition("\n")
    (project / where.removeprefix("# ")).write_text(code)

    _make(project, "fmt")  # as a user does after editing, before `make lint`
    _make(project, "lint")
    # The suite's parts every request of which meets the guard (the first resource's own tests,
    # the kit's, the server's, the settings'); with the guard's own test among them.
    parts = ("tests/items", "tests/kit", "tests/serving", "tests/test_settings.py",
             "tests/test_settings_table.py")  # fmt: skip
    # The guard reads the request and other such dependencies: the kit plans it like its own, so
    # the machinery test that holds every route to planned dependencies stays green (it runs).
    # The server's tests that send no credential on purpose, which the guide names too.
    anonymous = [
        "tests/serving/middleware/test_rate_limit_app.py::"
        "test_addresses_of_one_ipv6_64_share_one_bucket_and_another_64_has_its_own",
        "tests/serving/middleware/test_rate_limit_app.py::"
        "test_an_ipv4_mapped_ipv6_address_is_its_ipv4_address",
        "tests/serving/middleware/test_rate_limit_app.py::"
        "test_a_client_cannot_pick_its_bucket_by_writing_x_forwarded_for_itself",
        "tests/serving/test_stalled_clients.py::"
        "test_a_websocket_upgrade_is_answered_as_plain_http_with_a_problem",
    ]
    assert all(test.partition("::")[2] in guard for test in anonymous)
    deselected = [argument for test in anonymous for argument in ("--deselect", test)]
    suite = run(project, *PYTEST, *parts, *deselected, DATABASE_URL=postgres_url, timeout=1800)
    assert suite.returncode == 0, suite.stdout[-5000:] + suite.stderr[-2000:]
    assert re.search(r"\b\d{3,} passed", suite.stdout), suite.stdout[-500:]
    guarded = run(project, *PYTEST, "tests/kit/test_tokens.py", DATABASE_URL=postgres_url)
    assert re.search(r"^1 passed", guarded.stdout, re.MULTILINE), guarded.stdout[-3000:]


# A unique field and a field with an index (:filter:sort), named as the guide's example names them.
RENAMED_FIELDS = "sku:str(32):unique name:str(200):filter:sort price_cents:money"
# `item` wherever it names the resource (`items`, `item_id`, `ItemCreate`, `..items`).
_ITEM = re.compile(r"(?<!\w)(item|Item)(?=s\b|_|[A-Z]|\b)")


def _renamed(text: str) -> str:
    """`text` with the resource `item` called `product`: its table, classes, functions, paths;
    a dict's `.items()` stays."""
    renamed = _ITEM.sub(lambda match: "product" if match[1] == "item" else "Product", text)
    return renamed.replace(".products()", ".items()")


def test_renaming_a_resource_as_the_guide_says_keeps_its_rows_and_passes_the_drift_test(
    tmp_path: Path, postgres_url: str
) -> None:
    project = bake(tmp_path, fields=RENAMED_FIELDS)
    package = project / "src" / "inventory_service"
    recipe = _section(project / "docs" / "adding-a-resource.md", "Renaming a resource")
    (migration,) = _blocks(recipe, "python")
    header = '"""Rename items to products."""\n\nfrom alembic import op\n\n'
    revisions = (
        'revision = "0002"\ndown_revision = "0001"\nbranch_labels = None\ndepends_on = None\n'
    )
    versions = project / "migrations" / "versions"
    (versions / "0002_rename_items.py").write_text(header + revisions + "\n\n" + migration)
    # The folders, and every name in them; the registration; the README's section.
    for old in (package / "items", project / "tests" / "items"):
        new = old.with_name("products")
        old.rename(new)
        for path in new.glob("*.py"):
            path.write_text(_renamed(path.read_text()))
    resources = package / "serving" / "resources.py"
    resources.write_text(_renamed(resources.read_text()))
    readme = project / "README.md"
    text = readme.read_text()
    start, end = text.index("<!-- resource:items -->"), text.index("<!-- /resource:items -->")
    readme.write_text(
        text[:start] + _renamed(text[start:end]) + text[end:].replace("items", "products", 1)
    )

    # A row stored before the rename is the renamed table's.
    with scratch_database(postgres_url, "guide_rename") as url:
        alembic = (sys.executable, "-m", "alembic", "upgrade")
        assert run(project, *alembic, "0001", DATABASE_URL=url).returncode == 0
        insert = "INSERT INTO items (sku, name, price_cents) VALUES ('a-1', 'crate', 5)"
        asyncio.run(fetch(url, insert))
        upgraded = run(project, *alembic, "heads", DATABASE_URL=url)
        assert upgraded.returncode == 0, upgraded.stderr
        rows = asyncio.run(fetch(url, "SELECT sku FROM products"))
        assert [row["sku"] for row in rows] == ["a-1"]

    _make(project, "fmt")
    _make(project, "lint")
    parts = ("tests/test_drift.py", "tests/products", "tests/test_architecture.py")
    suite = run(project, *PYTEST, *parts, DATABASE_URL=postgres_url, timeout=1800)
    assert suite.returncode == 0, suite.stdout[-5000:] + suite.stderr[-2000:]
    assert "tests/test_drift.py" not in suite.stdout, suite.stdout[-3000:]


def test_the_readmes_api_key_recipe_prints_a_digest_api_key_hashes_takes_for_its_key(
    tmp_path: Path,
) -> None:
    """The README's two lines, pasted into a shell as they are: the second prints exactly what
    the setting takes (sha256sum's `<hex>  -` would be refused), the digest of the first's key."""
    project = bake(tmp_path, auth="api_key")
    section = _section(project / "README.md", "Authentication")
    (recipe, *_) = _blocks(section, "sh")
    shell = run(project, "bash", "-e", "-c", recipe + '\nprintf %s "$KEY"')
    assert shell.returncode == 0, shell.stderr
    printed, key = shell.stdout.rsplit("\n", 1)
    assert printed == hashlib.sha256(key.encode()).hexdigest()
    # The service's own settings take it, outside dev, as its one key.
    check = (
        "from inventory_service.settings import Settings; "
        "print(sorted(Settings(app_env='prod', database_url='postgresql://u@h/d').api_keys))"
    )
    taken = run(project, sys.executable, "-c", check, API_KEY_HASHES=printed)
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.strip() == repr([printed])
