"""Histograms a request feeds on every answer, kept as plain counts and exposed at scrape time
through prometheus_client's own custom-collector families.

prometheus_client's `Histogram.observe` walks its bounds in Python and takes a lock for the bucket
and another for the sum, and its `Counter.inc` one more: with the pool wait, about 24 thousand
instructions a request, for one thread on one event loop that needs no lock. Here a request pays
one `bisect` (in C) and two additions; the scrape (same thread, same loop: the metrics listener
is a second server on it) makes the cumulative buckets. The exposition is prometheus_client's
(`HistogramMetricFamily`, `CounterMetricFamily`), sample for sample what its Histogram and Counter
write (tests/observability/test_counted.py holds the two side by side).
"""

import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class CountedHistogram(Collector):
    """A histogram, and optionally the counter of the same observations, one series per label
    values. `series(*values)` gives a series' counts, `observe(counts, seconds)` adds to them:
    one slot per bucket (the last is +Inf), then the sum."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
        counter: tuple[str, str] | None = None,  # (name, documentation) of the counter
    ) -> None:
        self._name, self._documentation = name, documentation
        self._labelnames = tuple(labelnames)
        self.bounds = tuple(float(bound) for bound in buckets)
        self._le = [
            floatToGoString(bound)  # type: ignore[no-untyped-call]
            for bound in (*self.bounds, float("inf"))
        ]
        self._counter = counter
        self._series: dict[tuple[str, ...], tuple[list[float], float]] = {}
        if not self._labelnames:
            self.series()  # an unlabelled histogram has its one series from the start
        registry.register(self)

    def series(self, *values: str) -> list[float]:
        """The counts of the series with these label values (created on first use)."""
        found = self._series.get(values)
        if found is None:
            if len(values) != len(self._labelnames):
                raise ValueError(f"{self._name} takes the labels {self._labelnames}")
            found = ([0.0] * (len(self.bounds) + 2), time.time())
            self._series[values] = found
        return found[0]

    def observe(self, seconds: float) -> None:
        """One observation of the unlabelled series (the pool wait's callback)."""
        counts = self._series[()][0]
        counts[bisect_left(self.bounds, seconds)] += 1
        counts[-1] += seconds

    def describe(self) -> Iterator[Metric]:
        return iter(self._families())

    def collect(self) -> Iterator[Metric]:
        return iter(self._families(with_samples=True))

    def _families(self, with_samples: bool = False) -> list[Metric]:
        counter = None
        if self._counter is not None:
            counter = CounterMetricFamily(*self._counter, labels=self._labelnames)
        histogram = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for values, (counts, created) in list(self._series.items()) if with_samples else ():
            snapshot = list(counts)
            cumulative, buckets = 0.0, []
            for le, count in zip(self._le, snapshot[:-1], strict=True):
                cumulative += count
                buckets.append((le, cumulative))
            if counter is not None:
                counter.add_metric(values, cumulative, created=created)
            histogram.add_metric(values, buckets, snapshot[-1])
            histogram.add_sample(
                f"{self._name}_created", dict(zip(self._labelnames, values, strict=True)), created
            )
        return [histogram] if counter is None else [counter, histogram]
