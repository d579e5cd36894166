"""Each named option set (tests/option_sets.py: every `auth` x `jobs` among them), baked the
README's way and finished as `make install` finishes it, passes its own suite on PostgreSQL.
Apart from their lint and their other checks (tests/test_generation.py), so that two processes
share them."""

import sys
from pathlib import Path

import pytest

from .baking import PYTEST, run
from .option_sets import OPTION_SETS, Baked, bake_option_set


@pytest.fixture(scope="module", params=list(OPTION_SETS), ids=list(OPTION_SETS))
def variant(
    request: pytest.FixtureRequest,
    readme_cookiecutter: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Baked:
    return bake_option_set(
        request.param, readme_cookiecutter, tmp_path_factory.mktemp(request.param)
    )


def test_variant_passes_its_own_suite_on_postgres(variant: Baked, postgres_url: str) -> None:
    project, context = variant
    wanted = tuple(int(part) for part in context.get("python_version", "3.11").split("."))
    if sys.version_info < wanted:
        # A 3.12 bake uses 3.12 syntax (PEP 695 generics, as ruff's pyupgrade asks): only its
        # lint (mypy with its python_version) runs on an older interpreter.
        pytest.skip(f"the bake needs Python {context['python_version']}; this is {sys.version}")
    result = run(project, *PYTEST, DATABASE_URL=postgres_url, timeout=1800)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
