"""What a run leaves behind: the printed table, results JSON, a Markdown report and a PNG chart."""

import json
import statistics
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from .evidence import describe

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


def _cells(step: dict[str, Any]) -> list[str]:
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
    return "".join(f"{cell:>10}" for cell in _cells(step)) + (f"  {note}" if note else "")


def header() -> str:
    return "".join(f"{column:>10}" for column in COLUMNS)


def _step_notes(scenario: dict[str, Any]) -> dict[int, str]:
    return (
        {scenario["knee_index"]: scenario["verdict"]} if scenario["knee_index"] is not None else {}
    )


def _summary(results: dict[str, Any]) -> list[str]:
    """One line per scenario: the SLO capacity against the budget, its spread, the knee beside it."""
    lines = [
        "| scenario | SLO capacity RPS | budget RPS | p99 of the repeats ms | p99 at the serving rate ms | client CPU % | server CPU % | stolen % median / max: server core; other cores | knee RPS @ conc |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, scenario in results["scenarios"].items():
        found, knee = scenario["search"], scenario["steps"][scenario["knee_index"]]
        spread = found["spread"]
        capacity = "none" if found["slo_rps"] is None else f"{found['slo_rps']:,.0f}"
        p99 = (
            "-"
            if not spread
            else f"{spread['p99_min_ms']:.1f} / {spread['p99_median_ms']:.1f} / {spread['p99_max_ms']:.1f}"
        )
        client = "-" if not spread else f"{spread['client_cpu_max']:.0f}"
        server = (
            "-"
            if not spread or spread["server_cpu_median"] is None
            else f"{spread['server_cpu_median']:.0f}"
        )
        serving = scenario.get("serving")
        at_serving = (
            "-"
            if not serving
            else f"{serving['p99_median_ms']:.1f} at {serving['rate']:,.0f} RPS ({serving['fraction']:.0%})"
        )
        searched = [*found["trials"], *found["repeats"], *(serving["runs"] if serving else [])]
        lines.append(
            f"| {name} | {capacity} | {scenario['budget']['min_rps']:,.0f} | {p99} | {at_serving} | {client} | {server} |"
            f" {_stolen(searched, 'stolen')}; {_stolen(searched, 'stolen_elsewhere')} |"
            f" {knee['rps']:,.0f} @ {knee['concurrency']} ({scenario['verdict']}) |"
        )
    return lines


def _stolen(steps: list[dict[str, Any]], key: str) -> str:
    """Median / highest of a stolen-time figure over the open-loop steps of a scenario."""
    values = sorted(step[key] for step in steps if step.get(key) is not None)
    if not values:
        return "-"
    return f"{statistics.median(values):.0f} / {values[-1]:.0f}"


def markdown(results: dict[str, Any], chart: str | None) -> str:
    lines = [
        f"# Load test report: {results['started_at']}",
        "",
        f"Target {results['target']['url']}, server {results['target']['pinned']}; client "
        f"{results['client']['processes']} processes on cores {results['client']['cores']}, "
        f"capacity {results['client']['capacity_rps']:,.0f} RPS (from its CPU per request on /healthz).",
        "",
        "**Budget: " + ("met.**" if results["passed"] else "MISSED.**"),
        "",
    ]
    lines += [f"- {miss}" for miss in results["misses"]]
    lines += [
        "",
        "SLO capacity: the highest open-loop arrival rate served with p99 (from each request's"
        " scheduled start) and errors within budget, its last step repeated; p99 of the repeats as"
        " lowest / median / highest, client CPU the highest of the repeats (all client processes,"
        " % of one core), server CPU their median. p99 at the serving rate: the median of as many"
        " runs at the rate the capacity report serves at (serving_fraction of the SLO capacity)."
        " The knee is the closed loop's, for diagnosis. In the tables, stolen %: the share of the"
        " server's core the hypervisor gave to other machines during the step (the server could"
        " not run, and its CPU figure does not show it); elsewhere: the same of the other cores.",
        "",
        *_summary(results),
    ]
    if chart:
        lines += [
            "",
            f"![RPS and latency against concurrency; p99 against the offered rate]({chart})",
        ]
    table_head = "| " + " | ".join(COLUMNS) + " | |"
    rule = "|" + "---:|" * len(COLUMNS) + "---|"
    for name, scenario in results["scenarios"].items():
        budget = scenario["budget"]
        lines += [
            "",
            f"## {name}",
            "",
            f"Closed-loop sweep: **{scenario['verdict']}**. Budget: SLO capacity >= "
            f"{budget['min_rps']:,.0f} RPS with p99 <= {budget['max_p99_ms']:g} ms and error rate <= "
            f"{budget['max_error_rate']:.2%}. Observed error rate {scenario['error_rate']:.2%}.",
            "",
            table_head,
            rule,
        ]
        notes = _step_notes(scenario)
        for index, step in enumerate(scenario["steps"]):
            lines.append("| " + " | ".join(_cells(step)) + f" | {notes.get(index, '')} |")
        found = scenario["search"]
        lines += [
            "",
            f"Rate search ({found['step_seconds']:g} s a trial over {found['connections']} connections,"
            f" from {found['start_rps']:,.0f} RPS): SLO capacity **"
            + ("none" if found["slo_rps"] is None else f"{found['slo_rps']:,.0f} RPS")
            + "**.",
            "",
            table_head,
            rule,
        ]
        # Each trial with the service's own suspects over it, and what moved when it missed.
        for kind in ("trials", "repeats"):
            for step in found[kind]:
                note = f"{kind[:-1]}: {describe(step.get('evidence'))}"
                lines.append("| " + " | ".join(_cells(step)) + f" | {note} |")
        serving = scenario.get("serving")
        for step in serving["runs"] if serving else ():
            note = f"at {serving['fraction']:.0%}: {describe(step.get('evidence'))}"
            lines.append("| " + " | ".join(_cells(step)) + f" | {note} |")
    if results.get("wrk_check"):
        check = results["wrk_check"]
        lines += [
            "",
            "## Cross-check with wrk",
            "",
            f"by_id at {check['concurrency']} concurrent, {check['seconds']:g} s each, alternating "
            f"(engine, wrk, engine, wrk, engine), medians: "
            f"this engine {check['engine_rps']:,.0f} RPS, wrk {check['wrk_rps']:,.0f} RPS "
            f"(ratio {check['ratio']:.3f}; {'within' if check['agree'] else 'NOT within'} 15 %).",
        ]
    if results.get("capacity_text"):
        lines += ["", "## Capacity", "", "```", results["capacity_text"], "```"]
    return "\n".join(lines) + "\n"


def _search_chart(axes: Any, name: str, scenario: dict[str, Any]) -> None:
    """The rate search, where the capacity comes from: p99 (log) against the offered rate, each
    trial (passed or missed), each repeat and each run at the serving rate, the p99 budget as a
    line across and the SLO capacity as a line down."""
    found, budget = scenario["search"], scenario["budget"]
    marks = (("trials", "o", "trial"), ("repeats", "D", "repeat"))
    for kind, marker, label in marks:
        for passed, colour in ((True, "tab:green"), (False, "tab:red")):
            steps = [
                step
                for step in found[kind]
                if (step["p99_ms"] <= budget["max_p99_ms"] and step["errors"] == 0) == passed
            ]
            if steps:
                axes.plot(
                    [step["rate"] for step in steps], [step["p99_ms"] for step in steps],
                    marker, linestyle="none", color=colour, fillstyle="full" if passed else "none",
                    label=f"{label}, {'within' if passed else 'over'} budget",
                )  # fmt: skip
    serving = scenario.get("serving")
    if serving:
        axes.plot(
            [step["rate"] for step in serving["runs"]], [step["p99_ms"] for step in serving["runs"]],
            "s", linestyle="none", color="tab:blue",
            label=f"at the serving rate ({serving['fraction']:.0%})",
        )  # fmt: skip
    axes.axhline(
        budget["max_p99_ms"],
        color="grey",
        linestyle="--",
        label=f"p99 budget {budget['max_p99_ms']:g} ms",
    )
    if found["slo_rps"]:
        axes.axvline(found["slo_rps"], color="tab:purple", linestyle=":",
                     label=f"SLO capacity {found['slo_rps']:,.0f} RPS")  # fmt: skip
    axes.set_yscale("log")
    axes.set_xlabel("offered rate (open loop, RPS)")
    axes.set_ylabel("p99 (ms)")
    axes.set_title(f"{name}: rate search")
    axes.legend(loc="best", fontsize=7)


def chart(results: dict[str, Any], path: Path) -> Path:
    """The figure() as a PNG at `path`."""
    figure(results).savefig(path, dpi=90)
    return path


def figure(results: dict[str, Any]) -> Figure:
    """Per scenario, left: RPS (left axis) and p50/p99 (right axis, log) against concurrency in
    the closed-loop sweep, the knee marked, and the SLO capacity as a line across; right: the
    rate search (_search_chart)."""
    names = list(results["scenarios"])
    drawn = Figure(figsize=(13, 3.2 * len(names)), layout="constrained")
    grid = drawn.subplots(len(names), 2, squeeze=False)
    for axes, searching, name in zip(grid[:, 0], grid[:, 1], names, strict=True):
        scenario = results["scenarios"][name]
        _search_chart(searching, name, scenario)
        steps = scenario["steps"]
        concurrency = [step["concurrency"] for step in steps]
        axes.plot(concurrency, [step["rps"] for step in steps], "o-", color="tab:blue", label="RPS")
        axes.set_xscale("log", base=2)
        axes.set_xlabel("concurrency (closed loop)")
        axes.set_ylabel("RPS", color="tab:blue")
        axes.set_ylim(bottom=0)
        latency = axes.twinx()
        latency.plot(
            concurrency, [step["p50_ms"] for step in steps], "s--", color="tab:green", label="p50"
        )
        latency.plot(
            concurrency, [step["p99_ms"] for step in steps], "^--", color="tab:red", label="p99"
        )
        latency.set_yscale("log")
        latency.set_ylabel("latency (ms)")
        if scenario["knee_index"] is not None:
            knee = steps[scenario["knee_index"]]
            axes.axvline(knee["concurrency"], color="grey", linestyle=":")
            axes.annotate(
                f"{scenario['verdict']}: {knee['rps']:,.0f} RPS @ {knee['concurrency']}",
                (knee["concurrency"], knee["rps"]),
                textcoords="offset points",
                xytext=(6, -14),
                fontsize=8,
            )
        if scenario["search"]["slo_rps"]:
            slo = scenario["search"]["slo_rps"]
            axes.axhline(
                slo, color="tab:purple", linestyle="--", label=f"SLO capacity {slo:,.0f} RPS"
            )
        axes.set_title(name)
        handles = axes.get_legend_handles_labels()[0] + latency.get_legend_handles_labels()[0]
        latency.legend(handles=handles, loc="upper left", fontsize=8)
    return drawn


def write(results: dict[str, Any], folder: Path, stamp: str) -> dict[str, Path]:
    """results/<stamp>.json, .md and .png; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {suffix: folder / f"{stamp}.{suffix}" for suffix in ("json", "md", "png")}
    paths["json"].write_text(json.dumps(results, indent=2) + "\n")
    chart(results, paths["png"])
    paths["md"].write_text(markdown(results, paths["png"].name))
    return paths
