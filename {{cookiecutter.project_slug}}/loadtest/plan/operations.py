"""An operation of the scenario table and its request templates, without the service's code: the
client processes of the engine, k6's config writer and wrk's Lua writer need only this.

A template's placeholders: `{id}` an id of a seeded row of the operation's resource, `{n}` a random
whole number below RANDOM_BELOW, `{u}` a random whole number of exactly UNIQUE_DIGITS digits (a
unique field's value: 9 x 10^11 of them, so that a run's creates do not collide).
An operation's `headers` are templates too, e.g. a create's Idempotency-Key (`keyed`).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

PLACEHOLDER = re.compile(r"\{(id|n|u)\}")
RANDOM_BELOW = 1_000_000
UNIQUE_DIGITS = 12
UNIQUE_RANGE = (10 ** (UNIQUE_DIGITS - 1), 10**UNIQUE_DIGITS)  # low included, high excluded


@dataclass(frozen=True)
class Operation:
    name: str  # `<plural>.<operation>`, e.g. `items.by_id`
    method: str
    path: str  # the request target, placeholders included
    status: int  # the status that counts as a success
    body: str | None = None  # a JSON template, sent as application/json
    # Each id at most once (a delete): drawn in order from a range seeded for the run, not at random.
    consumes_id: bool = False
    resource: str = ""  # the plural whose seeded ids `{id}` draws from; "" when the path has none
    headers: tuple[tuple[str, str], ...] = ()  # (name, value template) sent on each request

    @property
    def route(self) -> str:
        """The name k6 tags the request with, one series per route: `GET /items?limit&after`."""
        path, _, query = self.path.partition("?")
        keys = "&".join(pair.partition("=")[0] for pair in query.split("&") if pair)
        return f"{self.method} {path}" + (f"?{keys}" if keys else "")


Mix = tuple[tuple[Operation, int], ...]  # operations and their weights

# A fresh key per request: two `{u}`, 24 random digits (a run's keys do not collide).
IDEMPOTENCY_KEY = ("Idempotency-Key", "loadtest-{u}{u}")


def keyed(operation: Operation) -> Operation:
    """A create (POST) that sends a fresh Idempotency-Key with each request: it runs in one
    transaction with the stored answer (kit/idempotency.py); any other operation unchanged."""
    if operation.method != "POST":
        return operation
    return replace(operation, headers=(*operation.headers, IDEMPOTENCY_KEY))


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
