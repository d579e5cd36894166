"""The jwt option sets' suites, as tests/test_generated_suites.py runs the others': a file of their
own, so that two of `make test`'s processes run the two halves at once."""

from pathlib import Path

import pytest

from .option_sets import Baked, bake_option_set

# The test is collected here too, where it takes this file's `variant`.
from .test_generated_suites import JWT, test_variant_passes_its_own_suite_on_postgres  # noqa: F401


@pytest.fixture(scope="module", params=JWT, ids=JWT)
def variant(
    request: pytest.FixtureRequest,
    readme_cookiecutter: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Baked:
    return bake_option_set(
        request.param, readme_cookiecutter, tmp_path_factory.mktemp(request.param)
    )
