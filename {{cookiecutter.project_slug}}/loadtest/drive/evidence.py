"""The service's own suspects for a step's tail, read from its /metrics (METRICS_PORT) just before
and just after the step: the event loop's lag (sampled every 0.5 s by the lifespan), the cyclic
collector's pauses (gc.callbacks), the waits for a pool connection and the requests refused by
admission (MAX_IN_FLIGHT); beside them the machine's own, the share of the server's core, and
of the other cores (PostgreSQL's and the client's), that the hypervisor gave to other machines over
the step (`stolen_pct`, `stolen_elsewhere_pct`, from the engine). A trial of
the SLO-capacity search that misses its p99 then says which of them moved against the lowest
passing trial, or that none did.

Histograms come in the buckets the service exports, so a worst value is the upper bound of the
highest bucket that gained a sample: coarse (0.1, 1, 5, 25, 100, 500, 2000 ms), but enough to tell
a 2 ms lag from a 100 ms one.
"""

import math
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from . import database

HISTOGRAMS = {
    "loop_lag": "event_loop_lag_seconds",
    "gc_pause": "gc_pause_seconds",
    "pool_wait": "db_pool_acquire_wait_seconds",
}
REFUSED = "http_admission_refused"
# What counts as moved: at least twice the baseline's figure and above a floor that a healthy
# service on a busy machine stays under.
_FLOORS_MS = {"loop_lag_max_ms": 5.0, "gc_pause_max_ms": 5.0, "pool_wait_max_ms": 1.0}
_GC_FLOOR_MS_PER_S = 1.0
_STOLEN_FLOOR_PCT = 3.0

Snapshot = dict[str, float]


def parse(text: str) -> Snapshot:
    """The samples the evidence needs, summed over labels: `<histogram>_sum`, `_count` and
    `_bucket:<le>` of each histogram, and the refusals counter."""
    wanted = {*HISTOGRAMS.values(), REFUSED}
    snapshot: Snapshot = {}
    for family in text_string_to_metric_families(text):
        if family.name not in wanted:
            continue
        for sample in family.samples:
            key = sample.name
            if sample.name.endswith("_bucket"):
                key = f"{sample.name}:{float(sample.labels['le']):g}"
            if sample.name.endswith("_created"):
                continue
            snapshot[key] = snapshot.get(key, 0.0) + sample.value
    return snapshot


def scrape(metrics_url: str) -> Snapshot:
    with urllib.request.urlopen(f"{metrics_url}/metrics", timeout=5) as response:  # noqa: S310
        return parse(response.read().decode())


def _worst_ms(before: Snapshot, after: Snapshot, metric: str) -> float | None:
    """Upper bound (ms) of the highest bucket that gained a sample; None when none did."""
    prefix = f"{metric}_bucket:"
    bounds = sorted(float(key.removeprefix(prefix)) for key in after if key.startswith(prefix))
    gained = after.get(f"{metric}_count", 0.0) - before.get(f"{metric}_count", 0.0)
    if gained <= 0:
        return None
    for bound in bounds:  # cumulative: the first bound holding every new sample
        key = f"{prefix}{bound:g}"
        if after.get(key, 0.0) - before.get(key, 0.0) >= gained:
            return bound * 1000 if math.isfinite(bound) else math.inf
    return math.inf


def between(before: Snapshot, after: Snapshot, seconds: float) -> dict[str, Any]:
    """What moved over a step of `seconds`: per suspect its samples, worst (bucket bound, ms) and
    for the collector its pause time per second of the step."""

    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    evidence: dict[str, Any] = {}
    for name, metric in HISTOGRAMS.items():
        evidence[f"{name}_count"] = int(delta(f"{metric}_count"))
        worst = _worst_ms(before, after, metric)  # 1e9: beyond the last bucket
        evidence[f"{name}_max_ms"] = None if worst is None else min(worst, 1e9)
    evidence["gc_pause_ms_per_s"] = round(delta("gc_pause_seconds_sum") * 1000 / seconds, 3)
    evidence["admission_refused"] = int(delta(f"{REFUSED}_total"))
    return evidence


def moved(evidence: dict[str, Any], baseline: dict[str, Any] | None) -> list[str]:
    """The suspects that moved against `baseline` (the lowest passing trial's evidence; None: none
    passed yet, every figure against its floor), each as `name baseline -> now`."""
    base = baseline or {}
    found = []
    for key, floor in _FLOORS_MS.items():
        now, then = evidence.get(key) or 0.0, base.get(key) or 0.0
        if now > max(floor, 2 * then):
            found.append(f"{key.removesuffix('_max_ms').replace('_', ' ')} {then:g} -> {now:g} ms")
    now, then = evidence.get("gc_pause_ms_per_s", 0.0), base.get("gc_pause_ms_per_s", 0.0)
    if now > max(_GC_FLOOR_MS_PER_S, 2 * then):
        found.append(f"gc {then:.1f} -> {now:.1f} ms/s")
    for key, where in (("stolen_pct", "server core"), ("stolen_elsewhere_pct", "other cores")):
        now, then = evidence.get(key) or 0.0, base.get(key) or 0.0
        if now > max(_STOLEN_FLOOR_PCT, 2 * then):
            found.append(f"stolen CPU ({where}) {then:g} -> {now:g} %")
    if evidence.get("admission_refused", 0) > 0:
        found.append(f"admission refused {evidence['admission_refused']}")
    return found


def describe(evidence: dict[str, Any] | None) -> str:
    """One cell of the report: the step's evidence, and what moved when it missed."""
    if not evidence:
        return "-"

    def worst(name: str) -> str:
        value = evidence.get(f"{name}_max_ms")
        return "-" if value is None else (">2000" if value >= 1e9 else f"{value:g}")

    parts = []
    if "gc_pause_count" in evidence:
        collections = evidence["gc_pause_count"]
        gc = "gc none" if not collections else (
            f"gc {evidence['gc_pause_ms_per_s']:.1f} ms/s ({collections}, ≤{worst('gc_pause')} ms)"
        )  # fmt: skip
        parts.append(
            f"lag ≤{worst('loop_lag')} ms, {gc}, pool wait ≤{worst('pool_wait')} ms, "
            f"refused {evidence['admission_refused']}"
        )
    if evidence.get("cpu_us_per_request") is not None:
        parts.append(f"CPU/request {evidence['cpu_us_per_request']:g} µs")
    if evidence.get("host_speed") is not None:
        parts.append(f"host {evidence['host_speed']:.0%}")
    text = ", ".join(parts) or "-"
    named = any(item.startswith("db ") for item in evidence.get("moved") or ())
    if evidence.get("db") and not named:  # a miss names it once, among what moved
        text += "; " + database.describe(evidence["db"])
    if evidence.get("moved") is not None:
        text += "; moved: " + (", ".join(evidence["moved"]) or "none of them")
    return text
