"""tests/conftest.py's work units: how `make test` shares its tests among its processes."""

import pytest
from xdist.remote import Producer

from .conftest import _ByWorkUnit, work_unit

EXAMPLE = "tests/test_generated_specs.py::test_random_option_sets_bake_the_readmes_way_lint_and_pass_their_suite[{}]"  # noqa: E501


def test_each_property_example_is_a_work_unit_of_its_own_and_any_other_file_is_one_whole() -> None:
    examples = [EXAMPLE.format(shard) for shard in range(3)]
    assert len({work_unit(nodeid) for nodeid in examples}) == 3
    chart = {work_unit("tests/test_chart.py::test_a"), work_unit("tests/test_chart.py::test_b[1]")}
    assert chart == {"tests/test_chart.py"}


def test_make_tests_loadfile_is_scheduled_by_work_unit_and_any_other_dist_as_xdist_has_it(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not pytestconfig.pluginmanager.hasplugin("xdist"):
        pytest.skip("xdist is off (-p no:xdist): no scheduler to ask for")
    monkeypatch.setattr(pytestconfig.option, "tx", ["popen"] * 2)
    log = Producer("test", enabled=False)
    monkeypatch.setattr(pytestconfig.option, "dist", "loadfile")
    scheduler = pytestconfig.hook.pytest_xdist_make_scheduler(config=pytestconfig, log=log)
    assert isinstance(scheduler, _ByWorkUnit)
    assert scheduler._split_scope(EXAMPLE.format(1)) == EXAMPLE.format(1)
    monkeypatch.setattr(pytestconfig.option, "dist", "load")  # make test-matrix's
    scheduler = pytestconfig.hook.pytest_xdist_make_scheduler(config=pytestconfig, log=log)
    assert not isinstance(scheduler, _ByWorkUnit)
