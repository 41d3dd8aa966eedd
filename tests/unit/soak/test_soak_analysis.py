"""The soak's flatness analysis on made-up samples: slopes, windows, quantiles, the verdict."""

from __future__ import annotations

from dataclasses import replace

import pytest
from bench.soak.analysis import (
    MIB,
    analyse,
    bucket_difference,
    quantile,
    slope_per_hour,
    window_seconds,
)
from bench.soak.options import Bounds
from tests.unit.soak.soaksamples import INF, buckets, steady_run


def test_the_slope_of_a_line_is_its_rate_per_hour() -> None:
    assert slope_per_hour([(0.0, 10.0), (1800.0, 15.0), (3600.0, 20.0)]) == pytest.approx(10.0)
    assert slope_per_hour([(0.0, 10.0), (60.0, 12.0), (120.0, 10.0), (180.0, 12.0)]) == pytest.approx(24.0)
    assert slope_per_hour([(5.0, 1.0)]) == 0.0


def test_the_quantile_is_prometheus_histogram_quantile() -> None:
    # 100 observations: 50 in (1, 2] ms, 50 in (2, 4] ms.
    observed = buckets({0.002: 50, 0.004: 50})
    assert quantile(0.5, observed) == pytest.approx(0.002)
    assert quantile(0.99, observed) == pytest.approx(0.002 + 0.002 * 49 / 50)
    # The rank in the +Inf bucket answers the highest finite bound, as Prometheus does.
    assert quantile(0.99, buckets({0.001: 10, INF: 90})) == pytest.approx(0.032)
    assert quantile(0.99, buckets({})) is None


def test_a_window_is_the_difference_of_its_two_ends() -> None:
    earlier = buckets({0.002: 10})
    later = buckets({0.002: 10, 0.008: 5})
    assert quantile(0.5, bucket_difference(later, earlier)) == pytest.approx(0.004 + 0.004 * 2.5 / 5)


def test_windows_are_ten_minutes_or_a_quarter_of_a_short_run() -> None:
    assert window_seconds(3600) == 600
    assert window_seconds(240) == 60


def test_a_flat_run_passes_every_bound() -> None:
    analysis = analyse(steady_run(), 3600, Bounds())
    assert analysis.passed, analysis.failures()
    assert analysis.rss_slope_mib_per_hour == pytest.approx(0.0)
    assert analysis.latency.first_p99 == analysis.latency.last_p99
    assert analysis.latency.first_count == analysis.latency.last_count == 1000
    assert analysis.scheduled == 6000
    assert (
        analysis.gauges["asyncio tasks"].whole.minimum == analysis.gauges["asyncio tasks"].whole.maximum == 90
    )


def test_memory_growing_faster_than_the_bound_fails_the_run() -> None:
    analysis = analyse(steady_run(rss=0.5), 3600, Bounds(rss_slope_mib_per_hour=24))
    assert analysis.rss_slope_mib_per_hour == pytest.approx(30.0)
    assert [check.what for check in analysis.failures()] == ["RSS slope after the first quarter"]
    assert analysis.rss_first_mib == pytest.approx(100.0)
    assert analysis.rss_start_mib == pytest.approx(100 + 0.5 * 15)
    assert analysis.rss_end_mib == analysis.rss_max_mib == pytest.approx(130.0)


def test_the_slope_ignores_the_first_quarter_while_caches_fill() -> None:
    samples = steady_run()
    warming = [
        replace(s, rss_bytes=int((60 + 40 * s.seconds / 900) * MIB)) for s in samples if s.seconds < 900
    ]
    analysis = analyse([*warming, *samples[len(warming) :]], 3600, Bounds())
    assert analysis.rss_slope_mib_per_hour == pytest.approx(0.0)
    assert analysis.passed


def test_tasks_left_behind_fail_the_run() -> None:
    analysis = analyse(steady_run(tasks_per_minute=1), 3600, Bounds(task_growth=20))
    tasks = analysis.gauges["asyncio tasks"]
    assert tasks.growth == pytest.approx(50)  # medians of minutes 0-10 and 50-60
    assert (tasks.whole.minimum, tasks.whole.maximum) == (90, 150)
    assert [check.what for check in analysis.failures()] == ["asyncio tasks (median, last - first window)"]


def test_a_watch_more_at_the_end_fails_the_run() -> None:
    samples = steady_run()
    samples[-1] = replace(samples[-1], watch_tasks=19)
    analysis = analyse(samples, 3600, Bounds())
    assert [check.what for check in analysis.failures()] == ["watch loops (most, last - first window)"]


def test_connections_beyond_the_request_pool_fail_the_run() -> None:
    samples = steady_run()
    samples[30] = replace(samples[30], api_connections=18 + 33, open_fds=50 + 21)
    analysis = analyse(samples, 3600, Bounds(connections_beyond_watches=32))
    assert analysis.gauges["API server connections beyond watch loops"].whole.maximum == 33
    assert [check.what for check in analysis.failures()] == [
        "API server connections beyond one per watch loop (most)"
    ]


def test_open_files_growing_apart_from_connections_fail_the_run() -> None:
    samples = steady_run()
    grown = [
        replace(s, open_fds=s.open_fds + 10, api_connections=s.api_connections + 1) for s in samples[50:]
    ]
    analysis = analyse([*samples[:50], *grown], 3600, Bounds(fd_growth=8))
    assert analysis.gauges["open files but API server connections"].growth == 9
    assert [check.what for check in analysis.failures()] == [
        "open files but API server connections (median, last - first window)"
    ]


def test_latency_growing_past_one_bucket_fails_the_run() -> None:
    analysis = analyse(steady_run(slow_from=45), 3600, Bounds())
    assert analysis.latency.first_p99 == pytest.approx(0.004 * 0.99 + 0.002 * 0.01, rel=0.05)
    assert analysis.latency.last_p99 == pytest.approx(0.008 + 0.008 * 0.99, rel=0.05)
    assert [check.what for check in analysis.failures()] == ["p99 attempt latency, last window / first"]


def test_a_stalled_scheduler_fails_the_run() -> None:
    samples = steady_run()
    stalled = [
        replace(s, attempt_buckets=samples[45].attempt_buckets) if s.seconds > 45 * 60 else s for s in samples
    ]
    analysis = analyse(stalled, 3600, Bounds())
    assert analysis.latency.last_count == 0
    assert [check.what for check in analysis.failures()] == [
        "scheduling attempts in the last window (none: stalled)"
    ]


def test_too_few_samples_are_refused() -> None:
    with pytest.raises(ValueError, match="at least four"):
        analyse(steady_run(minutes=2), 120, Bounds())
