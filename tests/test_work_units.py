"""tests/conftest.py's work units: how `make test` shares its tests among its processes."""

from .conftest import _ByWorkUnit, work_unit

EXAMPLE = "tests/test_generated_specs.py::test_random_option_sets_bake_the_readmes_way_lint_and_pass_their_suite[{}]"  # noqa: E501


def test_each_property_example_is_a_work_unit_of_its_own_and_any_other_file_is_one_whole() -> None:
    examples = [EXAMPLE.format(shard) for shard in range(3)]
    assert len({work_unit(nodeid) for nodeid in examples}) == 3
    chart = {work_unit("tests/test_chart.py::test_a"), work_unit("tests/test_chart.py::test_b[1]")}
    assert chart == {"tests/test_chart.py"}
    # The scheduler `make test` runs (--dist loadfile) splits by these units.
    assert _ByWorkUnit._split_scope(None, examples[1]) == examples[1]  # type: ignore[arg-type]
