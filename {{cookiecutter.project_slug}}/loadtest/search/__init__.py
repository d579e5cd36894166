"""Searching: each scenario's closed-loop sweep and its knee, the SLO capacity search on an open
loop, the budget check of what they found, and the pod sizing that follows from it."""

from .capacity import capacity_from, write_helm_values
from .capacity import describe as describe_capacity
from .knee import Verdict, client_capacity
from .slo import Limits, Plan, search
from .sweep import sweep
from .verdict import Outcome, check

__all__ = [
    "Limits",
    "Outcome",
    "Plan",
    "Verdict",
    "capacity_from",
    "check",
    "client_capacity",
    "describe_capacity",
    "search",
    "sweep",
    "write_helm_values",
]
