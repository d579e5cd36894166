"""What a run leaves behind: results JSON, a Markdown report and its PNG chart."""

import json
import statistics
from pathlib import Path
from typing import Any

from ..drive import describe
from . import database
from .chart import chart
from .table import COLUMNS, cells


def _step_notes(scenario: dict[str, Any]) -> dict[int, str]:
    return (
        {scenario["knee_index"]: scenario["verdict"]} if scenario["knee_index"] is not None else {}
    )


def _summary(results: dict[str, Any]) -> list[str]:
    """One line per scenario: the SLO capacity against the budget, its spread, the knee beside it."""
    lines = [
        "| scenario | SLO capacity RPS | capacity claimed RPS | budget RPS | p99 of the repeats ms | p99 at the serving rate ms | client CPU % | server CPU % | stolen % median / max: server core; other cores | server peak RSS MiB: scenario / at the serving rate | knee RPS @ conc |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
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
        held = scenario.get("capacity_rps")
        claimed = "none" if held is None else f"{held:,.0f}"
        searched = [*found["trials"], *found["repeats"], *(serving["runs"] if serving else [])]
        lines.append(
            f"| {name} | {capacity} | {claimed} | {scenario['budget']['min_rps']:,.0f} | {p99} | {at_serving} | {client} | {server} |"
            f" {_stolen(searched, 'stolen')}; {_stolen(searched, 'stolen_elsewhere')} |"
            f" {_mib(scenario.get('peak_rss_mib'))} / {_mib(serving and serving.get('peak_rss_mib'))} |"
            f" {knee['rps']:,.0f} @ {knee['concurrency']} ({scenario['verdict']}) |"
        )
    return lines


def _serving_lines(serving: dict[str, Any]) -> list[str]:
    """Each capacity tried at its serving rate, from the SLO capacity down, and the one claimed."""
    lines = [
        f"- at {serving['fraction']:.0%} of {attempt['capacity_rps']:,.0f} RPS ({attempt['rate']:,.0f} RPS):"
        f" p99 median {attempt['p99_median_ms']:.1f} ms over {attempt['runs']} runs,"
        f" {'every run held' if attempt['held'] else 'MISSED in a run'}"
        for attempt in serving.get("attempts", [])
    ]
    held = serving.get("capacity_rps")
    lines.append(
        f"Capacity claimed (the Helm values' source): **{held:,.0f} RPS**."
        if held is not None
        else "Capacity claimed: **none** (no serving rate held in every run)."
    )
    return lines


def _database_lines(database: dict[str, Any] | None) -> list[str]:
    """The database the run wrote to: its write-tail settings, its disk and the disk's fsync."""
    if not database:
        return []
    fsync = database["fsync"]
    disk = (
        f"{fsync['method']}: {fsync['ms_per_sync']:g} ms a sync ({fsync['ops_per_s']:,.0f}/s)"
        if "ms_per_sync" in fsync
        else f"not measured ({fsync.get('skipped', '-')})"
    )
    settings = ", ".join(f"`{name}={value}`" for name, value in database["settings"].items())
    return [
        "",
        f"Database: {settings or 'not read'}.",
        "",
        f"Its disk's fsync (pg_test_fsync, once a run): {disk}.",
    ]


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


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
    lines += _database_lines(results.get("database"))
    lines += [
        "",
        "SLO capacity: the highest open-loop arrival rate served with p99 (from each request's"
        " scheduled start) and errors within budget, its last step repeated; p99 of the repeats as"
        " lowest / median / highest, client CPU the highest of the repeats (all client processes,"
        " % of one core), server CPU their median. p99 at the serving rate: the median of as many"
        " runs at the rate the capacity report serves at (serving_fraction of the SLO capacity)."
        " The knee is the closed loop's, for diagnosis. In the tables, stolen %: the share of the"
        " server's core the hypervisor gave to other machines during the step (the server could"
        " not run, and its CPU figure does not show it); elsewhere: the same of the other cores."
        " Server peak RSS: the kernel's high-water mark of the server's resident memory, over every"
        " step of the scenario and over its runs at the serving rate; `make capacity` sizes the"
        " pod's memory from the run's highest.",
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
            lines.append("| " + " | ".join(cells(step)) + f" | {notes.get(index, '')} |")
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
                lines.append("| " + " | ".join(cells(step)) + f" | {note} |")
        serving = scenario.get("serving")
        for step in serving["runs"] if serving else ():
            note = f"at {serving['fraction']:.0%}: {describe(step.get('evidence'))}"
            lines.append("| " + " | ".join(cells(step)) + f" | {note} |")
        lines += ["", *_serving_lines(serving)] if serving else []
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
    lines += database.lines(results)
    if results.get("capacity_text"):
        lines += ["", "## Capacity", "", "```", results["capacity_text"], "```"]
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any], folder: Path, stamp: str) -> dict[str, Path]:
    """results/<stamp>.json, .md and .png; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {suffix: folder / f"{stamp}.{suffix}" for suffix in ("json", "md", "png")}
    paths["json"].write_text(json.dumps(results, indent=2) + "\n")
    chart(results, paths["png"])
    paths["md"].write_text(markdown(results, paths["png"].name))
    return paths
