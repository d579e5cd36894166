"""CountedHistogram (observability/counted.py) writes what prometheus_client's Histogram and
Counter write for the same observations, sample for sample; and the request series really are
counted that way."""

import re
from bisect import bisect_left

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


def test_a_labelled_histogram_with_its_counter_writes_what_prometheus_clients_write() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    counter = Counter("http_requests", "Requests answered.", LABELS, registry=theirs)
    histogram = Histogram("latency_seconds", "Time.", LABELS, buckets=BUCKETS, registry=theirs)
    counted = CountedHistogram(
        "latency_seconds", "Time.", LABELS, buckets=BUCKETS, registry=ours,
        counter=("http_requests", "Requests answered."),
    )  # fmt: skip
    for index, seconds in enumerate(SECONDS * 3):
        labels = SERIES[index % len(SERIES)]
        counter.labels(*labels).inc()
        histogram.labels(*labels).observe(seconds)
        counts = counted.series(*labels)
        counts[bisect_left(counted.bounds, seconds)] += 1
        counts[-1] += seconds
    assert _exposition(ours) == _exposition(theirs)


def test_an_unlabelled_histogram_writes_what_prometheus_clients_writes() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    histogram = Histogram("wait_seconds", "Waited.", buckets=BUCKETS, registry=theirs)
    counted = CountedHistogram("wait_seconds", "Waited.", buckets=BUCKETS, registry=ours)
    assert _exposition(ours) == _exposition(theirs)  # the series is there before any wait
    for seconds in SECONDS:
        histogram.observe(seconds)
        counted.observe(seconds)
    assert _exposition(ours) == _exposition(theirs)


def test_the_request_series_count_each_answer_in_its_bucket() -> None:
    metrics = Metrics()
    requests = RequestMetrics(metrics)
    for seconds in (0.0004, 0.003, 0.003):
        requests.observe("GET", "/items/{item_id}", 200, seconds)
    labels = {"method": "GET", "route": "/items/{item_id}", "status": "200"}
    sample = metrics.registry.get_sample_value
    assert sample("http_requests_total", labels) == 3
    assert sample("http_request_duration_seconds_count", labels) == 3
    assert sample("http_request_duration_seconds_bucket", {**labels, "le": "0.001"}) == 1
    assert sample("http_request_duration_seconds_bucket", {**labels, "le": "0.005"}) == 3
    assert sample("http_request_duration_seconds_sum", labels) == pytest.approx(0.0064)


def test_a_series_takes_exactly_its_labels() -> None:
    counted = CountedHistogram(
        "x_seconds", "X.", LABELS, buckets=BUCKETS, registry=CollectorRegistry()
    )
    with pytest.raises(ValueError, match="labels"):
        counted.series("GET")
