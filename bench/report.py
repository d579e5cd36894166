"""Turn the benchmark's raw runs into medians, ratios and target checks; write JSON, Markdown and
PNG."""

import json
import statistics
from pathlib import Path
from typing import Any

LABELS = {
    "generated": "generated service",
    "generated_log_off": "generated, ACCESS_LOG=off",
    "ceiling": "raw ASGI ceiling",
    "fastapi_floor": "FastAPI floor",
    "minimal": "minimal FastAPI",
    "baseline": "baseline ORM tier",
}
# The targets, as ratios from one run (docs/performance.md explains each).
TARGETS = {
    "generated/minimal": (1.3, ("by_id", "page", "create", "patch", "delete")),
    "generated/ceiling": (0.5, ("by_id", "page", "create", "patch", "delete")),
    # The access log's price: throughput with a line per request over throughput without.
    "generated/generated_log_off": (0.9, ("by_id", "page", "create", "patch")),
    "generated/baseline": (5.0, ("by_id", "page", "create", "patch")),
}
P99_AT_70_PERCENT_MS = 10.0
RSS_MB = 120.0


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    medians = {
        app: {
            workload: {
                "rps": statistics.median(run["rps"] for run in runs),
                "p99_ms": statistics.median(run["p99_ms"] for run in runs),
                "cpu_us": statistics.median(run["cpu_us"] for run in runs),
                "errors": sum(run["errors"] for run in runs),
            }
            for workload, runs in per_app.items()
        }
        for app, per_app in results["runs"].items()
    }
    ratios: dict[str, dict[str, float]] = {}
    checks = []
    if "generated" in medians:
        for other in ("ceiling", "fastapi_floor", "minimal", "baseline", "generated_log_off"):
            if other not in medians:
                continue
            key = f"generated/{other}"
            ratios[key] = {
                workload: medians["generated"][workload]["rps"] / medians[other][workload]["rps"]
                for workload in medians["generated"]
            }
            # The same comparison by the server's own CPU per request (other / generated): on a
            # shared machine it moves less than throughput does.
            ratios[f"{key} by CPU"] = {
                workload: medians[other][workload]["cpu_us"]
                / medians["generated"][workload]["cpu_us"]
                for workload in medians["generated"]
            }
            floor, workloads = TARGETS.get(key, (0.0, ()))
            for workload in workloads:
                if workload in ratios[key]:
                    value = ratios[key][workload]
                    checks.append(
                        {
                            "target": f"{key} {workload} >= {floor}",
                            "value": round(value, 2),
                            "met": value >= floor,
                        }
                    )
    if "fastapi_floor" in medians and "minimal" in medians:
        # What FastAPI alone, run by this template's route class, is over minimal FastAPI: the
        # floor has nothing but that route machinery, the driver and the encoder.
        ratios["fastapi_floor/minimal by CPU"] = {
            workload: medians["minimal"][workload]["cpu_us"]
            / medians["fastapi_floor"][workload]["cpu_us"]
            for workload in medians["fastapi_floor"]
        }
    if "generated" in medians:
        paced = results.get("paced_by_id")
        if paced:
            checks.append(
                {
                    "target": f"by-id p99 at 70% of knee <= {P99_AT_70_PERCENT_MS} ms",
                    "value": round(paced["p99_ms"], 2),
                    "met": paced["p99_ms"] <= P99_AT_70_PERCENT_MS,
                }
            )
        rss = results["rss_mb"]["generated"]
        checks.append(
            {
                "target": f"RSS after the run <= {RSS_MB} MB",
                "value": round(rss, 1),
                "met": rss <= RSS_MB,
            }
        )
    return {"medians": medians, "ratios": ratios, "checks": checks}


def markdown(results: dict[str, Any]) -> str:
    summary, machine, settings = results["summary"], results["machine"], results["settings"]
    medians = summary["medians"]
    workloads = list(next(iter(medians.values())))
    lines = [
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gb']} GB, "
        f"Linux {machine['kernel']}, Python {machine['python']}, "
        f"PostgreSQL {machine['postgresql']}, "
        f"{machine['wrk']}; {machine['date']}.",
        f"Servers pinned to core 0, PostgreSQL and wrk to core 1; {settings['rounds']} interleaved "
        f"rounds of {settings['duration']} s per app and workload, {settings['connections']} "
        f"connections, {settings['rows']} seeded rows, pool of {settings['pool_size']}. Medians.",
        "",
        "| app | " + " | ".join(f"{w} rps | p99 ms | CPU us/req" for w in workloads) + " |",
        "|---|" + "---:|---:|---:|" * len(workloads),
    ]
    for app, per_app in medians.items():
        cells = " | ".join(
            f"{per_app[w]['rps']:,.0f} | {per_app[w]['p99_ms']:.1f} | {per_app[w]['cpu_us']:.0f}"
            for w in workloads
        )
        lines.append(f"| {LABELS[app]} | {cells} |")
    if summary["ratios"]:
        lines += [
            "",
            "| ratio | " + " | ".join(workloads) + " |",
            "|---|" + "---:|" * len(workloads),
        ]
        for key, values in summary["ratios"].items():
            lines.append(f"| {key} | " + " | ".join(f"{values[w]:.2f}x" for w in workloads) + " |")
    paced = results.get("paced_by_id")
    if paced:
        lines += ["", f"by-id paced at 70 % of the knee: {paced['rps']:,.0f} rps offered over "
                  f"{paced['connections']} connections, p50 {paced['p50_ms']:.2f} ms, "
                  f"p99 {paced['p99_ms']:.2f} ms."]  # fmt: skip
    lines += [
        "",
        "RSS after the run: "
        + ", ".join(f"{LABELS[a]} {mb:.0f} MB" for a, mb in results["rss_mb"].items())
        + ".",
    ]
    lines += _beside_previous(results)
    if summary["checks"]:
        lines += ["", "| target | measured | met |", "|---|---:|---|"]
        lines += [
            f"| {c['target']} | {c['value']} | {'yes' if c['met'] else '**no**'} |"
            for c in summary["checks"]
        ]
    return "\n".join(lines) + "\n"


def _beside_previous(results: dict[str, Any]) -> list[str]:
    """The generated service's CPU per request and its two ratios by CPU, this run beside the run
    whose results.json this one replaced. Absolute figures of two runs differ with the machine's
    load; the ratios, each measured side by side within its own run, are the comparison."""
    previous = results.get("previous")
    now = results["summary"]
    if not previous or "generated" not in now["medians"]:
        return []
    # (label, path to the figure in a summary, format)
    rows: list[tuple[str, tuple[str, ...], str]] = [
        ("generated CPU us/req", ("medians", "generated", "{w}", "cpu_us"), "{:.0f}"),
        *(
            (f"{key} by CPU", ("ratios", f"{key} by CPU", "{w}"), "{:.2f}x")
            for key in ("generated/minimal", "generated/ceiling")
        ),
    ]

    def value(summary: dict[str, Any], path: tuple[str, ...], workload: str) -> float:
        found: Any = summary
        for part in path:
            found = found[part.format(w=workload)]
        return float(found)

    workloads = [w for w in now["medians"]["generated"] if w in previous["medians"]["generated"]]
    lines = [
        "",
        f"Beside the previous run ({previous['date']}): previous -> this run.",
        "",
        "| | " + " | ".join(workloads) + " |",
        "|---|" + "---:|" * len(workloads),
    ]
    for label, path, spelled in rows:
        cells = []
        for workload in workloads:
            try:
                before = spelled.format(value(previous, path, workload))
            except KeyError:
                before = "-"
            cells.append(f"{before} -> {spelled.format(value(now, path, workload))}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    medians = results["summary"]["medians"]
    workloads = list(next(iter(medians.values())))
    width = 0.8 / len(medians)
    figure, axes = plt.subplots(figsize=(9, 4.5))
    for index, (app, per_app) in enumerate(medians.items()):
        positions = [w + index * width for w in range(len(workloads))]
        axes.bar(positions, [per_app[w]["rps"] for w in workloads], width, label=LABELS[app])
    axes.set_xticks([w + width * (len(medians) - 1) / 2 for w in range(len(workloads))], workloads)
    axes.set_ylabel("requests/s (median, one core)")
    axes.set_title("Side-by-side benchmark")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_reports(results: dict[str, Any], out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    replaced = out / "results.json"
    if replaced.exists() and "previous" not in results:
        # Kept beside this run's figures: its summary and its date, not its raw runs.
        old = json.loads(replaced.read_text())
        results["previous"] = {"date": old["machine"]["date"], **old["summary"]}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    text = markdown(results)
    (out / "results.md").write_text(text)
    chart(results, out / "results.png")
    return text
