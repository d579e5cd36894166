"""What to run: the scenario table (every resource's operations and mixes), the requests and seed
rows derived from each resource's declaration, the budget, and the headers every request carries."""

from .budget import Budget, CapacityAssumptions, ScenarioBudget, load
from .declared import seed_rows
from .headers import ENVIRONMENT, HeadersError, environment, given, value_of
from .operations import PROBE, RANDOM_BELOW, UNIQUE_RANGE, Mix, Operation, fixed, parts, render
from .scenarios import (
    BY_NAME,
    OPERATIONS,
    SCENARIOS,
    kind_of,
    resource_of,
    resources_in,
    send_idempotency_keys,
    to_run,
)

__all__ = [
    "BY_NAME",
    "ENVIRONMENT",
    "OPERATIONS",
    "PROBE",
    "RANDOM_BELOW",
    "SCENARIOS",
    "UNIQUE_RANGE",
    "Budget",
    "CapacityAssumptions",
    "HeadersError",
    "Mix",
    "Operation",
    "ScenarioBudget",
    "environment",
    "fixed",
    "given",
    "kind_of",
    "load",
    "parts",
    "render",
    "resource_of",
    "resources_in",
    "seed_rows",
    "send_idempotency_keys",
    "to_run",
    "value_of",
]
