"""The bench's wrk workloads: operations of the bake's own scenario table
(loadtest/plan/scenarios.py), their Lua written by the bake's loadtest/drive/wrk.py, so that the
bench sends the load test's requests and a change to the table is measured here too."""

from pathlib import Path

from tests.baking import load_loadtest

NAMES = ("by_id", "page", "create", "patch", "delete")  # operations of the table, in report order
RESOURCE = "items"  # the bench's bakes keep the default resource


class Workloads:
    """wrk runs of the table's operations against one bake's service: ids at random in 1..rows
    (the rows the bench seeds), or, for an operation that uses each id once (delete), in order
    from `start`, the first of a range seeded for that run."""

    def __init__(self, project: Path, rows: int) -> None:
        self._scenarios = load_loadtest(project, "plan.scenarios")
        self._wrk = load_loadtest(project, "drive.wrk")
        self._operations = load_loadtest(project, "plan.operations")
        self._rows = rows
        missing = {f"{RESOURCE}.{name}" for name in NAMES} - set(self._scenarios.OPERATIONS)
        assert not missing, f"the bake's scenario table has no {missing}"

    def consumes_ids(self, workload: str) -> bool:
        operation = self._scenarios.OPERATIONS[f"{RESOURCE}.{workload.removesuffix('_keyed')}"]
        return bool(operation.consumes_id)

    def run(
        self,
        base: str,
        workload: str,
        *,
        seconds: int,
        connections: int,
        start: int = 1,
        delay_ms: int | None = None,
        headers: dict[str, str] | None = None,
        request_timeout_s: int | None = None,
    ) -> dict[str, float]:
        """One wrk run (one thread): requests, rps, p50_ms, p99_ms, errors. `<operation>_keyed`
        (e.g. create_keyed): the operation with a fresh Idempotency-Key per request."""
        operation = self._scenarios.OPERATIONS[f"{RESOURCE}.{workload.removesuffix('_keyed')}"]
        if workload.endswith("_keyed"):
            operation = self._operations.keyed(operation)
        mix = ((operation, 1),)
        lua = self._wrk.script(mix, low=start, high=self._rows, delay_ms=delay_ms)
        figures: dict[str, float] = self._wrk.run(
            base, lua, connections=connections, seconds=seconds, headers=headers,
            request_timeout_s=request_timeout_s,
        )  # fmt: skip
        return figures
