"""How flat a soak stayed: slopes, windows, histogram quantiles and the verdict (pure, no I/O).

The samples are the probe's (`probe.Sample`); each holds cumulative histogram buckets, so the
latency of any stretch of the run is the difference of the buckets at its two ends, read as
Prometheus' histogram_quantile reads it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.soak.options import Bounds
from bench.soak.probe import Buckets, Sample

MIB = 1024 * 1024
WINDOW_SECONDS = 600.0
"""The first and last windows compared: 10 minutes, or a quarter of a shorter run."""


def window_seconds(duration: float) -> float:
    return min(WINDOW_SECONDS, duration / 4)


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) points, in value per hour (0 for fewer than 2
    distinct times)."""
    times = [t for t, _ in points]
    if len(set(times)) < 2:
        return 0.0
    return 3600.0 * statistics.linear_regression(times, [v for _, v in points]).slope


def bucket_difference(later: Buckets, earlier: Buckets) -> Buckets:
    """The observations between two cumulative snapshots of one histogram, bucket by bucket."""
    before = dict(earlier)
    return tuple((bound, count - before.get(bound, 0.0)) for bound, count in later)


def quantile(q: float, buckets: Buckets) -> float | None:
    """Prometheus' histogram_quantile over cumulative (upper bound, count) buckets, +Inf last:
    linear within the bucket the rank falls in; the highest finite bound if it falls in +Inf.
    None when the buckets hold no observation."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


@dataclass(frozen=True)
class Spread:
    """One gauge over a stretch of the run."""

    minimum: float
    maximum: float
    median: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(0.0, 0.0, 0.0)
        return cls(min(values), max(values), statistics.median(values))


@dataclass(frozen=True)
class Gauge:
    """A gauge in the whole run and its first and last windows."""

    name: str
    whole: Spread
    first: Spread
    last: Spread

    @property
    def growth(self) -> float:
        """Median of the last window minus that of the first."""
        return self.last.median - self.first.median


@dataclass(frozen=True)
class Latency:
    """Scheduling-attempt latency (seconds) of the first and last windows."""

    first_p50: float | None
    first_p99: float | None
    last_p50: float | None
    last_p99: float | None
    first_count: float
    last_count: float

    @property
    def ratio(self) -> float | None:
        """p99 last over p99 first (None when either window saw no attempt)."""
        if not self.first_p99 or self.last_p99 is None:
            return None
        return self.last_p99 / self.first_p99


@dataclass(frozen=True)
class Check:
    """One bound: what was measured against what was allowed."""

    what: str
    measured: float
    allowed: float
    unit: str

    @property
    def passed(self) -> bool:
        return self.measured <= self.allowed


@dataclass(frozen=True)
class Analysis:
    duration: float
    window: float
    rss_first_mib: float
    """At the first sample, as the churn began."""
    rss_start_mib: float
    """At the first sample after the first quarter, where the slope's fit begins."""
    rss_end_mib: float
    rss_max_mib: float
    rss_slope_mib_per_hour: float
    """Fitted over the run after its first quarter."""
    gauges: dict[str, Gauge]
    latency: Latency
    sli_p99_first: float | None
    sli_p99_last: float | None
    scheduled: float
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]


GAUGES: dict[str, Callable[[Sample], float]] = {
    "asyncio tasks": lambda sample: sample.tasks,
    "watch loops": lambda sample: sample.watch_tasks,
    "API server connections": lambda sample: sample.api_connections,
    "API server connections beyond watch loops": lambda sample: sample.api_connections - sample.watch_tasks,
    "open files": lambda sample: sample.open_fds,
    "open files but API server connections": lambda sample: sample.open_fds - sample.api_connections,
    "threads": lambda sample: sample.threads,
    "RSS (MiB)": lambda sample: sample.rss_bytes / MIB,
    "pending pods (active + backoff)": lambda sample: sample.pending_active + sample.pending_backoff,
    "unschedulable pods held": lambda sample: sample.pending_unschedulable,
}


def _at_or_before(samples: Sequence[Sample], seconds: float) -> Sample:
    """The last sample taken at or before ``seconds`` (the first sample if none)."""
    chosen = samples[0]
    for sample in samples:
        if sample.seconds <= seconds:
            chosen = sample
    return chosen


def _at_or_after(samples: Sequence[Sample], seconds: float) -> Sample:
    """The first sample taken at or after ``seconds`` (the last sample if none)."""
    for sample in samples:
        if sample.seconds >= seconds:
            return sample
    return samples[-1]


def _latency_between(
    start: Sample, end: Sample, pick: Callable[[Sample], Buckets]
) -> tuple[float | None, float | None, float]:
    """(p50, p99, observations) of a histogram between two samples."""
    difference = bucket_difference(pick(end), pick(start))
    count = difference[-1][1] if difference else 0.0
    return quantile(0.5, difference), quantile(0.99, difference), count


def analyse(samples: Sequence[Sample], duration: float, bounds: Bounds) -> Analysis:
    """The figures and the verdict of one run's samples (taken from its start to ``duration``)."""
    if len(samples) < 4:
        raise ValueError(f"{len(samples)} samples: the analysis needs at least four")
    window = window_seconds(duration)
    end = samples[-1].seconds
    first = [sample for sample in samples if sample.seconds <= window]
    last = [sample for sample in samples if sample.seconds >= end - window]
    settled = [sample for sample in samples if sample.seconds >= end / 4]
    gauges = {
        name: Gauge(
            name,
            Spread.of([read(sample) for sample in samples]),
            Spread.of([read(sample) for sample in first]),
            Spread.of([read(sample) for sample in last]),
        )
        for name, read in GAUGES.items()
    }
    first_start, first_end = samples[0], _at_or_after(samples, window)
    last_start, last_end = _at_or_before(samples, end - window), samples[-1]
    first_p50, first_p99, first_count = _latency_between(first_start, first_end, lambda s: s.attempt_buckets)
    last_p50, last_p99, last_count = _latency_between(last_start, last_end, lambda s: s.attempt_buckets)
    latency = Latency(first_p50, first_p99, last_p50, last_p99, first_count, last_count)
    _, sli_first, _ = _latency_between(first_start, first_end, lambda s: s.sli_buckets)
    _, sli_last, _ = _latency_between(last_start, last_end, lambda s: s.sli_buckets)
    rss_slope = slope_per_hour([(sample.seconds, sample.rss_bytes / MIB) for sample in settled])
    checks = [
        Check("RSS slope after the first quarter", rss_slope, bounds.rss_slope_mib_per_hour, "MiB/h"),
        Check(
            "asyncio tasks (median, last - first window)",
            gauges["asyncio tasks"].growth,
            bounds.task_growth,
            "",
        ),
        Check(
            "watch loops (most, last - first window)",
            gauges["watch loops"].last.maximum - gauges["watch loops"].first.maximum,
            bounds.watch_growth,
            "",
        ),
        Check(
            "API server connections beyond one per watch loop (most)",
            gauges["API server connections beyond watch loops"].whole.maximum,
            bounds.connections_beyond_watches,
            "",
        ),
        Check(
            "open files but API server connections (median, last - first window)",
            gauges["open files but API server connections"].growth,
            bounds.fd_growth,
            "",
        ),
    ]
    if latency.ratio is not None:
        checks.append(
            Check("p99 attempt latency, last window / first", latency.ratio, bounds.latency_ratio, "x")
        )
    elif last_count == 0:
        checks.append(Check("scheduling attempts in the last window (none: stalled)", 1.0, 0.0, ""))
    return Analysis(
        duration=duration,
        window=window,
        rss_first_mib=samples[0].rss_bytes / MIB,
        rss_start_mib=settled[0].rss_bytes / MIB,
        rss_end_mib=samples[-1].rss_bytes / MIB,
        rss_max_mib=max(sample.rss_bytes for sample in samples) / MIB,
        rss_slope_mib_per_hour=rss_slope,
        gauges=gauges,
        latency=latency,
        sli_p99_first=sli_first,
        sli_p99_last=sli_last,
        scheduled=samples[-1].scheduled - samples[0].scheduled,
        checks=checks,
    )
