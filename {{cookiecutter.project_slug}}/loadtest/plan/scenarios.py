"""The scenario table, one row of operations per resource of the service (serving/resources.py
RESOURCES), each request derived from the resource's declaration (loadtest/plan/declared.py).

Every client builds its requests from here: the Python engine (loadtest/drive/http.py), k6 (the generic
loadtest/drive/k6/crud.js reads the table from the config loadtest/drive/k6.py writes) and wrk (loadtest/drive/wrk.py
writes its Lua, for the engine's cross-check and the template's bench). An operation is named
`<plural>.<operation>`, a scenario too: `items.by_id`, `items.page`, `items.create`,
`items.patch` (one operation each), `items.filtered` (a filtered, sorted page, for a resource
with a field marked :filter or :sort) and `items.mixed` (80 % by id, 20 % patches); `items.delete`
is an operation of the table (the bench's) but no scenario, since each id can be deleted once, and
`items.create` is none either where a unique field has no room for a fresh value in each create
(loadtest/plan/declared.py: `fresh_creates`), so that a run never measures conflicts.
"""

from {{ cookiecutter.package_name }}.kit import Resource
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES

from .budget import Budget
from .declared import create_body, filtered_query, fresh_creates, patch_body, plural
from .operations import Mix, Operation, keyed

# The scenarios of every resource, in this order; each is judged by the budget of its operation.
KINDS = ("by_id", "page", "filtered", "create", "patch", "mixed")


def operations_of(resource: Resource) -> dict[str, Operation]:
    name, prefix = plural(resource), resource.prefix
    query = filtered_query(resource)
    filtered = [Operation(f"{name}.filtered", "GET", f"{prefix}?{query}", 200)] if query else []
    return {
        operation.name: operation
        for operation in (
            Operation(f"{name}.by_id", "GET", prefix + "/{id}", 200, resource=name),
            Operation(f"{name}.page", "GET", prefix + "?limit=20&after={id}", 200, resource=name),
            Operation(f"{name}.create", "POST", prefix, 201, create_body(resource)),
            Operation(
                f"{name}.patch", "PATCH", prefix + "/{id}", 200, patch_body(resource), resource=name
            ),
            Operation(
                f"{name}.delete", "DELETE", prefix + "/{id}", 204, consumes_id=True, resource=name
            ),
            *filtered,
        )
    }


def scenarios_of(resource: Resource, operations: dict[str, Operation]) -> dict[str, Mix]:
    name = plural(resource)
    by_id, patch = operations[f"{name}.by_id"], operations[f"{name}.patch"]
    left_out = set() if fresh_creates(resource) else {f"{name}.create"}
    singles = {
        f"{name}.{kind}": ((operations[f"{name}.{kind}"], 1),)
        for kind in KINDS[:-1]
        # filtered: only with a marked field; create: only where each writes fresh unique values
        if f"{name}.{kind}" in operations and f"{name}.{kind}" not in left_out
    }
    return singles | {f"{name}.mixed": ((by_id, 80), (patch, 20))}


OPERATIONS: dict[str, Operation] = {}
SCENARIOS: dict[str, Mix] = {}
for _resource in RESOURCES:
    OPERATIONS |= operations_of(_resource)
    SCENARIOS |= scenarios_of(_resource, OPERATIONS)


def send_idempotency_keys() -> None:
    """`--idempotency-keys`: every create of the table, in every scenario, sends a fresh
    Idempotency-Key from now on; called once, before any client is built from the table."""
    for name, operation in OPERATIONS.items():
        OPERATIONS[name] = keyed(operation)
    for name, mix in SCENARIOS.items():
        SCENARIOS[name] = tuple((OPERATIONS[operation.name], weight) for operation, weight in mix)


# The resources by plural, in the order of RESOURCES.
BY_NAME: dict[str, Resource] = {plural(resource): resource for resource in RESOURCES}


def kind_of(scenario: str) -> str:
    """The operation a scenario's name ends with, the key of its budget: `items.by_id` -> `by_id`."""
    return scenario.rpartition(".")[2]


def resource_of(scenario: str) -> str:
    """The resource a scenario's name starts with: `line_items.mixed` -> `line_items`."""
    return scenario.rpartition(".")[0]


def resources_in(names: list[str]) -> list[str]:
    """The resources whose ids the scenarios `names` need seeded, in order, each once."""
    return list(dict.fromkeys(resource_of(name) for name in names))


def to_run(chosen: list[str] | None, budget: Budget) -> list[str]:
    """The scenarios chosen, else every scenario of every resource that the budget judges."""
    return chosen or [name for name in SCENARIOS if budget.covers(name)]
