"""The scenario table: every scenario a weighted mix of its operations, each operation written
once, rendering to a request the service accepts."""

import json
import random

from loadtest import project
from loadtest.budget import load
from loadtest.scenarios import OPERATIONS, SCENARIOS, fixed, parts, render


def test_each_scenario_of_the_budget_is_a_mix_of_operations_of_the_table() -> None:
    assert set(SCENARIOS) == set(load(project.BUDGET).scenarios)
    for mix in SCENARIOS.values():
        assert all(
            OPERATIONS[operation.name] is operation and weight > 0 for operation, weight in mix
        )


def test_the_mixed_scenario_is_80_percent_reads_by_id_and_20_percent_patches() -> None:
    weights = {operation.name: weight for operation, weight in SCENARIOS["mixed"]}
    assert weights == {"by_id": 80, "patch": 20}


def test_a_template_splits_into_text_and_placeholders_and_renders_back() -> None:
    split = parts(OPERATIONS["page"].path)
    assert split == [f"{project.PREFIX}?limit=20&after=", "id", ""]
    assert render(split, lambda name: 42) == f"{project.PREFIX}?limit=20&after=42"


def test_each_body_renders_to_a_json_object_of_numbers_and_text() -> None:
    rng = random.Random(1)
    for operation in OPERATIONS.values():
        if operation.body is not None:
            body = json.loads(render(parts(operation.body), lambda name: rng.randrange(10**6)))
            assert isinstance(body, dict)
            assert body


def test_a_route_names_the_path_without_its_values() -> None:
    assert OPERATIONS["by_id"].route == "GET " + project.PREFIX + "/{id}"
    assert OPERATIONS["page"].route == f"GET {project.PREFIX}?limit&after"
    assert OPERATIONS["create"].route == f"POST {project.PREFIX}"
    assert fixed("/healthz")[0][0].route == "GET /healthz"


def test_only_the_delete_consumes_its_ids() -> None:
    assert [name for name, operation in OPERATIONS.items() if operation.consumes_id] == ["delete"]
