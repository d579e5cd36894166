"""The generator tested the way users use it: random option sets the hook accepts (tests/specs.py),
each baked the README's way, finished as `make install` finishes it, then the bake's own
`make lint` and its suite on PostgreSQL. A failure shrinks to the smallest option set that fails
(SPECS_SHRINK=1, as `make test-matrix` runs it); each one found stays a named case run every time
(tests/test_generated_specs_found.py).

`make test` runs SPECS_SHARDS (3) shards of SPECS_EXAMPLES (1) example, from a seed that changes
from run to run (tests/conftest.py draws it once for every process; shard n draws from
SPECS_SEED + n), printed at the end of the run: SPECS_SEED=<n> replays them, and with
`-k "suite[n]"` shard n alone. An example is a whole suite (150-230 s on a process of `make test`
in CI), so each shard is a work unit of its own (tests/conftest.py, `work_unit`): `make test`'s
processes run them side by side, not one after the other. `make test-matrix` runs SPECS_SHARDS
shards of SPECS_EXAMPLES each (4 x 10).
"""

import os
import secrets
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, note, seed, settings

from .readme_way import bake_readme_way, finish, lint_and_test
from .specs import OptionSet, option_sets

EXAMPLES = int(os.environ.get("SPECS_EXAMPLES", "1"))
SHARDS = int(os.environ.get("SPECS_SHARDS", "3"))
SEED = int(os.environ.get("SPECS_SEED") or secrets.randbelow(2**32))
SHRINK = os.environ.get("SPECS_SHRINK") == "1"


@pytest.mark.parametrize("shard", range(SHARDS))
def test_random_option_sets_bake_the_readmes_way_lint_and_pass_their_suite(
    shard: int,
    readme_cookiecutter: Path,
    postgres_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    record_property: Callable[[str, object], None],
) -> None:
    record_property("SPECS_SEED", SEED)  # the node's id names the shard

    @seed(SEED + shard)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.generate, *([Phase.shrink] if SHRINK else [])],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(option_sets())
    def bakes_green(options: OptionSet) -> None:
        note(repr(options))  # printed with a failing example: the option set to keep as a case
        project = bake_readme_way(
            readme_cookiecutter, tmp_path_factory.mktemp("spec"), **options.context()
        )
        finish(project)
        lint_and_test(project, postgres_url)

    bakes_green()
