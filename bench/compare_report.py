"""bench.compare's figures: medians, head/base ratios and spread per workload, the table printed,
and the gate's verdict. Plain functions of the recorded runs, so they are tested on given
numbers."""

import statistics
from typing import Any

SIDES = ("base", "head")
# Per side, per workload, one dict of wrk's figures and `cpu_us` per round.
Runs = dict[str, dict[str, list[dict[str, float]]]]
FIGURES = ("rps", "cpu_us")


def _side(runs: list[dict[str, float]]) -> dict[str, float]:
    """Medians, and the spread of the rounds: (max - min) / median."""
    cell: dict[str, float] = {"errors": sum(run["errors"] for run in runs)}
    for figure in FIGURES:
        values = [run[figure] for run in runs]
        cell[figure] = statistics.median(values)
        cell[f"{figure}_spread"] = (max(values) - min(values)) / cell[figure]
    return cell


def summarise(runs: Runs) -> dict[str, dict[str, Any]]:
    """Per workload: each side's medians and spread; head/base of the medians; and head/base of
    each round's pair (two runs one after the other), whose range shows what noise alone does."""
    summary: dict[str, dict[str, Any]] = {}
    for workload, base_runs in runs["base"].items():
        head_runs = runs["head"][workload]
        cell: dict[str, Any] = {name: _side(runs[name][workload]) for name in SIDES}
        cell["ratio"] = {f: cell["head"][f] / cell["base"][f] for f in FIGURES}
        cell["round_ratios"] = {
            f: [head[f] / base[f] for base, head in zip(base_runs, head_runs, strict=True)]
            for f in FIGURES
        }
        summary[workload] = cell
    return summary


def regressions(summary: dict[str, dict[str, Any]], fail_above: float) -> list[str]:
    """One line per workload whose median CPU per request on head exceeds base's by more than
    `fail_above` percent, or whose runs on head had errors (a broken route answers fast)."""
    failures = []
    for workload, cell in summary.items():
        excess = (cell["ratio"]["cpu_us"] - 1) * 100
        if excess > fail_above:
            failures.append(
                f"{workload}: median CPU per request {cell['head']['cpu_us']:.0f} us on head, "
                f"{cell['base']['cpu_us']:.0f} us on base: {excess:+.1f} % "
                f"(limit +{fail_above:g} %)"
            )
        if cell["head"]["errors"]:
            failures.append(
                f"{workload}: {cell['head']['errors']:.0f} error answers or socket errors on head"
            )
    return failures


def _figure(cell: dict[str, Any], figure: str, digits: str) -> str:
    base, head = cell["base"], cell["head"]
    rounds = cell["round_ratios"][figure]
    return (
        f"{base[figure]:{digits}} ±{base[f'{figure}_spread'] * 50:2.0f}% "
        f"{head[figure]:{digits}} ±{head[f'{figure}_spread'] * 50:2.0f}% "
        f"{cell['ratio'][figure]:5.2f} [{min(rounds):.2f}-{max(rounds):.2f}]"
    )


def _revision(revision: dict[str, str]) -> str:
    changed = revision.get("changed_files")
    return f"{revision['revision']} ({revision['commit'][:10]}" + (
        f" + {changed} changed files)" if changed not in (None, "0") else ")"
    )


def table(results: dict[str, Any]) -> str:
    """The summary as text: per workload, req/s then CPU us/request of base and head (median,
    ± half the rounds' range), head/base of the medians [range of the rounds' pairs]."""
    settings = results["settings"]
    base, head = (_revision(results["revisions"][name]) for name in SIDES)
    lines = [
        f"base {base}, head {head}; "
        f"{settings['rounds']} rounds of {settings['duration']} s, "
        f"{settings['connections']} connections; medians, ± half the range of the rounds",
        f"{'workload':8} {'req/s: base':>13} {'head':>11} {'head/base':>17}   "
        f"{'CPU us/req: base':>16} {'head':>9} {'head/base':>17}",
    ]
    for workload, cell in results["summary"].items():
        lines.append(
            f"{workload:8} {_figure(cell, 'rps', '7.0f')}   {_figure(cell, 'cpu_us', '6.0f')}"
        )
    return "\n".join(lines)
