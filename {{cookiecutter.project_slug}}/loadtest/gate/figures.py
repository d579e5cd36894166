"""The regression gate's figures (loadtest/gate/compare.py): per scenario the server's CPU per request of
each side, head/base of each round's pair, the verdict and the table. Plain functions of the
recorded runs, so they are tested on given numbers."""

import statistics
from typing import Any

SIDES = ("base", "head")
# Per side, per scenario, one run per round: wrk's figures and the server's `cpu_us` per request.
Runs = dict[str, dict[str, list[dict[str, float]]]]


def summarise(runs: Runs) -> dict[str, dict[str, Any]]:
    """Per scenario: each side's median CPU per request; head/base of each round's pair (the two
    runs one after the other, on the same machine state); their median, the figure judged, and
    their range, what the noise did."""
    summary: dict[str, dict[str, Any]] = {}
    for scenario, base_runs in runs["base"].items():
        head_runs = runs["head"][scenario]
        ratios = [
            head["cpu_us"] / base["cpu_us"] for base, head in zip(base_runs, head_runs, strict=True)
        ]
        summary[scenario] = {
            "base_us": statistics.median(run["cpu_us"] for run in base_runs),
            "head_us": statistics.median(run["cpu_us"] for run in head_runs),
            "ratio": statistics.median(ratios),
            "round_ratios": ratios,
            "head_errors": sum(run["errors"] for run in head_runs),
            "base_rps": statistics.median(run["rps"] for run in base_runs),
            "head_rps": statistics.median(run["rps"] for run in head_runs),
        }
    return summary


def regressions(summary: dict[str, dict[str, Any]], margin: float) -> list[str]:
    """One line per scenario whose CPU per request on head is more than `margin` percent above
    base's (median of the rounds' head/base), or whose runs on head had errors (a broken route
    answers fast)."""
    failures = []
    for scenario, cell in summary.items():
        excess = (cell["ratio"] - 1) * 100
        if excess > margin:
            low, high = min(cell["round_ratios"]), max(cell["round_ratios"])
            failures.append(
                f"{scenario} costs {excess:+.1f} % server CPU per request "
                f"({cell['head_us']:.0f} us on head, {cell['base_us']:.0f} us on base; "
                f"rounds {low:.2f}-{high:.2f}), over the margin of +{margin:g} %"
            )
        if cell["head_errors"]:
            failures.append(f"{scenario}: {cell['head_errors']:.0f} error answers on head")
    return failures


def table(summary: dict[str, dict[str, Any]], margin: float) -> str:
    """The summary as text: medians of CPU microseconds a request, head/base (median of the
    rounds' pairs), the range of the rounds' pairs, and the verdict; throughput for information
    only."""
    width = max([len("scenario"), *map(len, summary)])
    lines = [
        f"{'scenario':{width}} {'base us/req':>11} {'head us/req':>11} {'head/base':>9} "
        f"{'rounds':>11}  {'verdict':7} {'req/s base':>10} {'head':>7}"
    ]
    for scenario, cell in summary.items():
        rounds = cell["round_ratios"]
        verdict = "SLOWER" if (cell["ratio"] - 1) * 100 > margin else "ok"
        lines.append(
            f"{scenario:{width}} {cell['base_us']:11.0f} {cell['head_us']:11.0f} "
            f"{cell['ratio']:9.3f} {min(rounds):5.2f}-{max(rounds):<5.2f}  {verdict:7} "
            f"{cell['base_rps']:10.0f} {cell['head_rps']:7.0f}"
        )
    return "\n".join(lines)
