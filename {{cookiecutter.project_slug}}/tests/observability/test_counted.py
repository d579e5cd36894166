"""CountedHistogram (observability/counted.py) writes what prometheus_client's Histogram and
Counter write for the same observations, sample for sample, fed as the service feeds it: the
request series through the edge's RequestMetrics, the pool wait through `observe`."""

import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from {{ cookiecutter.package_name }}.observability.counted import CountedHistogram
from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_metrics import RequestMetrics

BUCKETS = (0.001, 0.0025, 0.5, 1.0)
# On a bound, between bounds, below the first, above the last, zero: each bucket's edge.
SECONDS = [0.0, 0.0005, 0.001, 0.0010001, 0.0025, 0.3, 0.5, 1.0, 1.5, 7.25]
LABELS = ("method", "route", "status")
SERIES = [("GET", "/items/{item_id}", "200"), ("POST", "/items", "201"), ("GET", "/items", "422")]


def _exposition(registry: CollectorRegistry) -> str:
    """The text a scrape gets, with the creation times (the clock) masked."""
    text = generate_latest(registry).decode()
    return re.sub(r"^(\w+_created\S*) \S+$", r"\1 <time>", text, flags=re.MULTILINE)


def _families(registry: CollectorRegistry, *names: str) -> str:
    """The exposition lines of these metric families only."""
    family = re.compile(
        "^(# \\w+ )?(" + "|".join(names) + ")(_total|_created|_bucket|_count|_sum)?[ {]"
    )
    return "\n".join(line for line in _exposition(registry).splitlines() if family.match(line))


def test_the_request_series_write_what_prometheus_clients_counter_and_histogram_write() -> None:
    metrics = Metrics()
    requests = RequestMetrics(metrics)  # what the edge calls on every answer
    theirs = CollectorRegistry()
    counter = Counter("http_requests", "Requests answered.", LABELS, registry=theirs)
    histogram = Histogram(
        "http_request_duration_seconds",
        "Time from the request reaching the app to the end of the response.",
        LABELS, buckets=metrics.latency.bounds, registry=theirs,
    )  # fmt: skip
    for index, seconds in enumerate(SECONDS * 3):
        method, route, status = SERIES[index % len(SERIES)]
        counter.labels(method, route, status).inc()
        histogram.labels(method, route, status).observe(seconds)
        requests.observe(method, route, int(status), seconds)
    names = ("http_requests", "http_request_duration_seconds")
    ours = _families(metrics.registry, *names)
    assert ours.count("_bucket{") == len(SERIES) * (len(metrics.latency.bounds) + 1)
    assert ours == _families(theirs, *names)


def test_an_unlabelled_histogram_writes_what_prometheus_clients_writes() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    histogram = Histogram("wait_seconds", "Waited.", buckets=BUCKETS, registry=theirs)
    counted = CountedHistogram("wait_seconds", "Waited.", buckets=BUCKETS, registry=ours)
    assert _exposition(ours) == _exposition(theirs)  # the series is there before any wait
    for seconds in SECONDS:
        histogram.observe(seconds)
        counted.observe(seconds)
    assert _exposition(ours) == _exposition(theirs)


def test_a_series_takes_exactly_its_labels() -> None:
    counted = CountedHistogram(
        "x_seconds", "X.", LABELS, buckets=BUCKETS, registry=CollectorRegistry()
    )
    with pytest.raises(ValueError, match="labels"):
        counted.series("GET")
