"""What each write scenario's tail owes to its database, from the run's own figures: at the
serving rate, what the service's backends waited on, the WAL's sync time, checkpoints and
autovacuum; beside the disk's fsync time. docs/sizing.md explains the table; the figures are
only ever this run's."""

import statistics
from typing import Any

HEAD = (
    "| scenario | p99 at the serving rate ms | waits of active backends (mean) | WAL syncs/s |"
    " ms a WAL sync | checkpoints begun | autovacuum runs | dead tuples after |"
)
RULE = "|---|---:|---|---:|---:|---:|---:|---:|"


def _row(name: str, scenario: dict[str, Any]) -> str | None:
    serving = scenario.get("serving") or {}
    figures = [
        step["evidence"]["db"]
        for step in serving.get("runs", [])
        if (step.get("evidence") or {}).get("db")
    ]
    if not figures or not any(figure.get("wal_syncs") for figure in figures):
        return None  # reads only: no commit waits for the disk
    waits: dict[str, float] = {}
    for figure in figures:
        for event, mean in figure["waits"].items():
            waits[event] = waits.get(event, 0.0) + mean / len(figures)
    named = ", ".join(
        f"{event} {mean:.2f}"
        for event, mean in sorted(waits.items(), key=lambda item: -item[1])[:3]
    )
    syncs = [figure["wal_syncs"] / figure["seconds"] for figure in figures if figure["seconds"]]
    each = [
        figure["wal_sync_ms"] / figure["wal_syncs"]
        for figure in figures
        if figure.get("wal_sync_ms") and figure.get("wal_syncs")
    ]
    dead = figures[-1].get("dead_tuples", {})
    return (
        f"| {name} | {serving['p99_median_ms']:.1f} | {named or 'none'} |"
        f" {statistics.median(syncs):,.0f} |"
        f" {'-' if not each else f'{statistics.median(each):.2f}'} |"
        f" {sum(figure['checkpoints'] for figure in figures)} |"
        f" {sum(sum(figure['autovacuums'].values()) for figure in figures)} |"
        f" {sum(dead.values()):,} |"
    )


def lines(results: dict[str, Any]) -> list[str]:
    """The section of the report; empty when no scenario wrote or no database was read."""
    rows = [row for name, scenario in results["scenarios"].items() if (row := _row(name, scenario))]
    if not rows:
        return []
    fsync = (results.get("database") or {}).get("fsync") or {}
    disk = (
        f"the disk's own fsync by {fsync['method']}: {fsync['ms_per_sync']:g} ms (pg_test_fsync)"
        if "ms_per_sync" in fsync
        else "the disk's own fsync not measured"
    )
    return [
        "",
        "## What the write tail owes to the database",
        "",
        f"Over the runs at the serving rate; {disk}. Every commit waits for its WAL to reach the"
        " disk: `IO:WalSync` is a backend in that wait, `LWLock:WALWrite` one queued behind it.",
        "",
        HEAD,
        RULE,
        *rows,
    ]
