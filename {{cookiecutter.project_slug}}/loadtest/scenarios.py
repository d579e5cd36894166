"""The scenarios of the knee test and of the k6 script: weighted mixes of operations."""

SCENARIOS: dict[str, tuple[tuple[str, int], ...]] = {
    "by_id": (("by_id", 1),),
    "page": (("page", 1),),
    "create": (("create", 1),),
    "patch": (("patch", 1),),
    "mixed": (("by_id", 80), ("patch", 20)),
}
# The client's own capacity is measured on the cheapest request the service answers.
PROBE = (("GET /healthz", 1),)
