"""A run's PNG chart: per scenario the closed-loop sweep and the rate search."""

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure


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
