"""The benchmark's arithmetic: percentiles, per-pod timings, throughput."""

from __future__ import annotations

import math

import pytest
from bench.stats import PodClock, percentile, ratio


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile(list(reversed(values)), 0.5) == 50.0
    assert math.isnan(percentile([], 0.5))


def test_created_is_the_earlier_of_the_call_returning_and_the_watch() -> None:
    clock = PodClock()
    clock.create_returned("a", 10.0)
    clock.saw("a", 9.5)  # the watch showed it before the create call returned
    clock.saw("a", 11.0, "node-1")
    clock.saw("a", 12.0, "node-2")  # only the first binding counts
    clock.saw("b", 10.2)
    clock.create_returned("b", 10.4)
    clock.saw("b", 10.7, "node-3")
    assert clock.created == {"a": 9.5, "b": 10.2}
    assert clock.bound == {"a": 11.0, "b": 10.7}
    assert clock.nodes == {"a": "node-1", "b": "node-3"}


def test_summary_throughput_and_latencies() -> None:
    clock = PodClock()
    for index in range(10):
        clock.create_returned(f"p{index}", float(index))
        clock.saw(f"p{index}", index + 0.5, "n")
    clock.create_returned("warm", -100.0)
    clock.saw("warm", -99.0, "n")
    timings = clock.summary([f"p{index}" for index in range(10)])
    assert timings.complete
    assert timings.span == pytest.approx(9.5)
    assert timings.throughput == pytest.approx(10 / 9.5)
    assert timings.create_rate == pytest.approx(10 / 9)
    assert timings.p50 == pytest.approx(0.5)
    assert timings.p99 == pytest.approx(0.5)


def test_summary_counts_pods_never_bound() -> None:
    clock = PodClock()
    clock.create_returned("a", 1.0)
    clock.create_returned("b", 2.0)
    clock.saw("a", 3.0, "n")
    timings = clock.summary(["a", "b"])
    assert not timings.complete
    assert (timings.pods, timings.bound) == (2, 1)
    assert clock.bound_count({"a", "b"}) == 1
    nothing = PodClock().summary(["x"])
    assert math.isnan(nothing.throughput) and math.isnan(nothing.p99)


def test_ratio() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert math.isnan(ratio(1.0, 0.0))
    assert math.isnan(ratio(math.nan, 2.0))
