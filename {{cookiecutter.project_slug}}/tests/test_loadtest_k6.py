"""The k6 config: the requests of each scenario from the scenario table, the ids from Python."""

from loadtest import project
from loadtest.budget import load
from loadtest.k6 import IDS, config
from loadtest.scenarios import SCENARIOS, parts


def test_the_k6_config_carries_each_scenarios_operations_and_weights_from_the_table() -> None:
    budget = load(project.BUDGET)
    settings = config(budget, url="http://x/", ids=[3, 5], names=list(SCENARIOS), seconds=10.0)
    assert settings["base_url"] == "http://x"
    assert settings["ids"] == [3, 5]
    for name, mix in SCENARIOS.items():
        expected = [{"operation": op.name, "weight": weight} for op, weight in mix]
        assert settings["mixes"][name] == expected
        # Every scenario runs the script's one (default) function, which reads its mix by name.
        assert "exec" not in settings["options"]["scenarios"][name]
        for operation, _ in mix:
            assert settings["operations"][operation.name] == {
                "method": operation.method,
                "path": parts(operation.path),
                "body": parts(operation.body) if operation.body is not None else None,
                "status": operation.status,
                "route": operation.route,
            }


def test_the_k6_config_holds_only_the_chosen_scenarios_and_at_most_IDS_ids() -> None:
    budget = load(project.BUDGET)
    ids = list(range(1, IDS + 100))
    settings = config(budget, url="http://x", ids=ids, names=["create"], seconds=10.0)
    assert list(settings["operations"]) == ["create"]
    assert list(settings["mixes"]) == ["create"]
    assert settings["ids"] == ids[:IDS]
