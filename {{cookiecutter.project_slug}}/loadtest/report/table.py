"""The console table of a run: one line per step, as `make loadtest` prints it while it runs."""

from typing import Any

COLUMNS = (
    "conc",
    "rate",
    "RPS",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "errors",
    "client %",
    "server %",
    "stolen %",
    "elsewhere",
)


def cells(step: dict[str, Any]) -> list[str]:
    def number(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    return [
        str(step["concurrency"] or "-"),
        number(step["rate"], 0),
        number(step["rps"], 0),
        number(step["p50_ms"]),
        number(step["p95_ms"]),
        number(step["p99_ms"]),
        number(step["max_ms"]),
        str(step["errors"]),
        number(step["client_cpu"], 0),
        number(step["server_cpu"], 0),
        number(step.get("stolen"), 0),
        number(step.get("stolen_elsewhere"), 0),
    ]


def row(step: dict[str, Any], note: str = "") -> str:
    """One step as a line of the console table."""
    return "".join(f"{cell:>10}" for cell in cells(step)) + (f"  {note}" if note else "")


def header() -> str:
    return "".join(f"{column:>10}" for column in COLUMNS)


def say(line: str) -> None:
    print(line, flush=True)
