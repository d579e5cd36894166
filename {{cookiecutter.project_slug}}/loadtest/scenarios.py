"""The one scenario table: each operation once, each scenario a weighted mix of operations.

Every client builds its requests from here: the Python engine (loadtest/http.py), k6 (the generic
loadtest/k6/crud.js reads the table from the config loadtest/k6.py writes) and wrk (loadtest/wrk.py
writes its Lua, for the engine's cross-check and the template's bench). A template's placeholders:
`{id}` an id of a seeded row, `{n}` a random whole number below RANDOM_BELOW.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from .project import PREFIX

PLACEHOLDER = re.compile(r"\{(id|n)\}")
RANDOM_BELOW = 1_000_000


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: str  # the request target, placeholders included
    status: int  # the status that counts as a success
    body: str | None = None  # a JSON template, sent as application/json
    # Each id at most once (a delete): drawn in order from a range seeded for the run, not at random.
    consumes_id: bool = False

    @property
    def route(self) -> str:
        """The name k6 tags the request with, one series per route: `GET /items?limit&after`."""
        path, _, query = self.path.partition("?")
        keys = "&".join(pair.partition("=")[0] for pair in query.split("&") if pair)
        return f"{self.method} {path}" + (f"?{keys}" if keys else "")


Mix = tuple[tuple[Operation, int], ...]  # operations and their weights

OPERATIONS = {
    operation.name: operation
    for operation in (
        Operation("by_id", "GET", PREFIX + "/{id}", 200),
        Operation("page", "GET", PREFIX + "?limit=20&after={id}", 200),
        Operation("create", "POST", PREFIX, 201, '{"name": "load {n}", "price_cents": {n}}'),
        Operation("patch", "PATCH", PREFIX + "/{id}", 200, '{"quantity": {n}}'),
        Operation("delete", "DELETE", PREFIX + "/{id}", 204, consumes_id=True),
    )
}

# The load test's scenarios, each judged by its own section of budget.toml.
SCENARIOS: dict[str, Mix] = {
    "by_id": ((OPERATIONS["by_id"], 1),),
    "page": ((OPERATIONS["page"], 1),),
    "create": ((OPERATIONS["create"], 1),),
    "patch": ((OPERATIONS["patch"], 1),),
    "mixed": ((OPERATIONS["by_id"], 80), (OPERATIONS["patch"], 20)),
}


def fixed(path: str) -> Mix:
    """A mix of one GET of `path`, answered 200: `probe` and `search` against any path."""
    return ((Operation(f"GET {path}", "GET", path, 200), 1),)


# The client's own capacity is measured on the cheapest request the service answers.
PROBE = fixed("/healthz")


def parts(template: str) -> list[str]:
    """A template split into literal text (even places) and placeholder names (odd places)."""
    return PLACEHOLDER.split(template)


def render(split: list[str], value: Callable[[str], int]) -> str:
    """The text of a split template, each placeholder replaced by `value(name)`."""
    return "".join(part if index % 2 == 0 else str(value(part)) for index, part in enumerate(split))
