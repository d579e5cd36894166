"""bench.instructions' figures: this run's counts merged over the last run's, and the Markdown of
its tables (the apps with their ratios; the options, each beside the generated service; the
production configuration beside FastAPI doing the same, with its goal's verdict). Plain functions
of the recorded counts, so they are tested on given numbers."""

from typing import Any

from bench.report import LABELS
from bench.workloads import NAMES

RATIOS = (  # (numerator, denominator): a ratio above 1 means the numerator runs fewer instructions
    ("generated", "minimal"),
    ("generated", "ceiling"),
    ("generated", "fastapi_floor"),
    ("fastapi_floor", "minimal"),
    ("fastapi_floor", "ceiling"),
    ("generated", "generated_log_off"),
)
OPTION_LABELS = {  # the options of bench.instructions' OPTIONS, as the table describes them
    "api_key": "auth=api_key, the key on every request",
    "jwt": "auth=jwt, one RS256 token on every request, verified-token cache",
    "tracing_0.1": "TRACING=true, 10 % sampled, no exporter",
    "idempotent_create": "a fresh Idempotency-Key on every create",
}
# The production configuration of bench.instructions' PRODUCTION, each beside the other.
PRODUCTION_LABELS = {
    "production": "generated service",
    "production_fastapi": "FastAPI the usual way (bench/apps/production_fastapi.py)",
}
# The goal: FastAPI the usual way runs at least this many times the generated service's
# instructions on every workload, both with production's options on.
PRODUCTION_GOAL = 1.3


def merged(results: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    """`results` with every app of `previous` it did not count, each with its date."""
    # A file written before apps had dates of their own: all its apps share its date.
    dates = {**dict.fromkeys(previous["apps"], previous["date"]), **previous.get("dates", {})}
    apps = {**previous["apps"], **results["apps"]}
    order = [name for name in (*LABELS, *OPTION_LABELS, *PRODUCTION_LABELS) if name in apps]
    counted = {*results["workloads"], *previous["workloads"]}
    return {
        **results,
        "workloads": [name for name in NAMES if name in counted],
        "apps": {name: apps[name] for name in order},
        "dates": {name: results["dates"].get(name) or dates[name] for name in order},
    }


def _thousands(figures: dict[str, Any], workload: str) -> float | None:
    """Thousands of instructions per request of `workload`, or of its keyed form."""
    for name in (workload, f"{workload}_keyed"):
        if name in figures:
            return float(figures[name]["per_request"]) / 1000
    return None


def _counted(results: dict[str, Any]) -> str:
    """When each app was counted: this run's date, then each earlier run's with its apps."""
    earlier: dict[str, list[str]] = {}
    for name, date in results.get("dates", {}).items():
        if date != results["date"]:
            earlier.setdefault(date, []).append(f"`{name}`")
    return "; ".join(
        [f"counted {results['date']}"]
        + [f"{', '.join(names)} from the run of {date}" for date, names in sorted(earlier.items())]
    )


def _table(header: str, workloads: list[str], rows: dict[str, list[str]]) -> list[str]:
    lines = [f"| {header} | " + " | ".join(workloads) + " |", "|---|" + "---:|" * len(workloads)]
    return lines + [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows.items()]


def markdown(results: dict[str, Any]) -> str:
    per = results["apps"]
    workloads = results["workloads"]
    lines = [
        f"callgrind: user-space instructions per request of each server process (thousands), wrk "
        f"over TCP with {results['connections']} connections, {results['duration']} s per app "
        f"and workload after {results['warmup']} s of warm-up; {_counted(results)}.",
        "",
    ]
    apps = {
        LABELS[name]: [
            "-" if (count := _thousands(per[name], w)) is None else f"{count:,.0f}"
            for w in workloads
        ]
        for name in per
        if name in LABELS
    }
    lines += _table("app", workloads, apps)
    ratios = {}
    for top, bottom in RATIOS:
        if top in per and bottom in per:
            pairs = [(_thousands(per[top], w), _thousands(per[bottom], w)) for w in workloads]
            ratios[f"{top}/{bottom}"] = [f"{b / t:.2f}x" if t and b else "-" for t, b in pairs]
    if ratios:
        lines += ["", *_table("ratio (fewer instructions is faster)", workloads, ratios)]
    options = {
        f"`{name}`: {OPTION_LABELS[name]}": [
            _price(_thousands(per[name], w), _thousands(per.get("generated", {}), w))
            for w in workloads
        ]
        for name in per
        if name in OPTION_LABELS
    }
    if options:
        lines += [
            "",
            "The generated service with one option on: thousands of instructions per request, "
            "and the difference from the generated service's (the keyed create beside its "
            "create).",
            "",
            *_table("option", workloads, options),
        ]
    return "\n".join(lines + _production(per, workloads)) + "\n"


def _production(per: dict[str, Any], workloads: list[str]) -> list[str]:
    """The production configuration's table, FastAPI's count over the generated service's, and
    the goal's verdict on the workloads both were counted on."""
    if not all(name in per for name in PRODUCTION_LABELS):
        return []
    counts = {name: [_thousands(per[name], w) for w in workloads] for name in PRODUCTION_LABELS}
    rows = {
        label: ["-" if count is None else f"{count:,.0f}" for count in counts[name]]
        for name, label in PRODUCTION_LABELS.items()
    }
    ratios = {
        workload: fastapi / generated
        for workload, generated, fastapi in zip(workloads, *counts.values(), strict=True)
        if generated and fastapi
    }
    rows[f"FastAPI / generated (goal: at least {PRODUCTION_GOAL}x)"] = [
        f"{ratios[w]:.2f}x" if w in ratios else "-" for w in workloads
    ]
    return [
        "",
        "The production configuration: `auth=jwt` (one RS256 token on every request), tracing at "
        "10 % with no exporter, a fresh Idempotency-Key on every create; the generated service "
        "and FastAPI doing the same the usual way, thousands of instructions per request.",
        "",
        *_table("production configuration", workloads, rows),
        "",
        production_verdict(ratios),
    ]


def production_verdict(ratios: dict[str, float]) -> str:
    """Whether FastAPI the usual way runs at least PRODUCTION_GOAL times the generated service's
    instructions on each workload of `ratios` (FastAPI's count over the generated service's)."""
    if not ratios:
        return "Goal not checked: no workload was counted for both."
    short = {w: ratio for w, ratio in ratios.items() if ratio < PRODUCTION_GOAL}
    if short:
        shortfalls = ", ".join(f"{w} {ratio:.2f}x" for w, ratio in short.items())
        return f"Goal ({PRODUCTION_GOAL}x fewer instructions) **not met** on: {shortfalls}."
    lowest = min(ratios, key=ratios.__getitem__)
    return (
        f"Goal ({PRODUCTION_GOAL}x fewer instructions) met on {', '.join(ratios)}: the lowest "
        f"ratio is {ratios[lowest]:.2f}x ({lowest})."
    )


def _price(count: float | None, generated: float | None) -> str:
    """An option's count, and its difference from the generated service's as "+N k" and %."""
    if count is None:
        return "-"
    if not generated:
        return f"{count:,.0f}"
    return f"{count:,.0f} ({count - generated:+,.0f} k, {100 * (count / generated - 1):+.1f} %)"
