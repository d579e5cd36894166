"""Each named option set (tests/option_sets.py: every `auth` x `jobs` among them), baked the
README's way and finished as `make install` finishes it, passes its own suite on PostgreSQL.
Apart from their lint and their other checks (tests/test_generation.py), so that two processes
share them."""

import sys

import pytest

from .baking import PYTEST, run
from .option_sets import OPTION_SETS, Baked, baked_variants

# Three option sets' suites run elsewhere, on the same options, rather than twice: the default
# one's in tests/test_pip_install.py (a bake made the README's way, its suite with the bake's own
# venv after `make install`), api_key x jobs's with the specs users reported in
# tests/test_upgrade.py (its suite after `make template-update`, which runs it), and the short
# unique field's (jwt without jobs) in tests/test_lowest_versions.py, on the oldest versions its
# bounds allow: jwt's code runs on the newest in the jwt x jobs set's suite.
ELSEWHERE = {"default", "api-key-jobs-products", "jwt-short-unique-field"}
# The jwt sets' suites in tests/test_generated_suites_jwt.py: `make test`'s processes each take a
# file, and these suites are its longest.
JWT = [
    name for name in OPTION_SETS if OPTION_SETS[name].get("auth") == "jwt" and name not in ELSEWHERE
]
HERE = [name for name in OPTION_SETS if name not in ELSEWHERE and name not in JWT]


variant = baked_variants(HERE)


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
