"""Per-pod timings from the client's side, and what one run of one scheduler adds up to."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in [0, 1]): a value that was really observed."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


class PodClock:
    """When each pod was created and when it was first seen bound, on one monotonic clock.

    "Created" is the earlier of the create call returning and the watch first showing the
    pod (the watch can be first when the client is busy); "bound" is the first watch event
    with ``spec.nodeName`` set.
    """

    def __init__(self) -> None:
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.nodes: dict[str, str] = {}

    def saw(self, name: str, at: float, node: str | None = None) -> None:
        """A watch event for ``name``; ``node`` is its ``spec.nodeName`` if set."""
        if name not in self.created or at < self.created[name]:
            self.created[name] = at
        if node and name not in self.bound:
            self.bound[name] = at
            self.nodes[name] = node

    def create_returned(self, name: str, at: float) -> None:
        if name not in self.created or at < self.created[name]:
            self.created[name] = at

    def bound_count(self, names: set[str] | None = None) -> int:
        if names is None:
            return len(self.bound)
        return sum(1 for name in self.bound if name in names)

    def summary(self, names: Sequence[str]) -> Timings:
        """The timings of ``names`` (the measured pods); pods never bound count as missing."""
        created = [self.created[name] for name in names if name in self.created]
        bound_names = [name for name in names if name in self.bound]
        latencies = [max(0.0, self.bound[name] - self.created[name]) for name in bound_names]
        if not created or not bound_names:
            return Timings(pods=len(names), bound=len(bound_names))
        first_created = min(created)
        last_created = max(created)
        last_bound = max(self.bound[name] for name in bound_names)
        return Timings(
            pods=len(names),
            bound=len(bound_names),
            first_created=first_created,
            last_created=last_created,
            last_bound=last_bound,
            latencies=latencies,
        )


@dataclass
class Timings:
    pods: int
    bound: int
    first_created: float = math.nan
    last_created: float = math.nan
    last_bound: float = math.nan
    latencies: list[float] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.bound == self.pods

    @property
    def span(self) -> float:
        """From the first pod created to the last one bound."""
        return self.last_bound - self.first_created

    @property
    def throughput(self) -> float:
        """Pods bound per second over the span (NaN if nothing was bound)."""
        span = self.span
        return self.bound / span if span > 0 else math.nan

    @property
    def create_rate(self) -> float:
        """Pods created per second: the most any scheduler could have reached."""
        span = self.last_created - self.first_created
        return self.pods / span if span > 0 else math.nan

    @property
    def p50(self) -> float:
        return percentile(self.latencies, 0.50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies, 0.99)

    @property
    def max_latency(self) -> float:
        return max(self.latencies) if self.latencies else math.nan


def ratio(ours: float, theirs: float) -> float:
    if not theirs or math.isnan(theirs) or math.isnan(ours):
        return math.nan
    return ours / theirs


@dataclass(kw_only=True)
class RunMeasures:
    """What every run of one scheduler measures: the measured pods' timings, the scheduler's own
    counters and the CPU each process used over the measured span."""

    kind: str
    nodes: int
    repeat: int
    order: int
    """Position in the size's sequence of runs (1-based)."""
    pods: int
    bound: int
    throughput: float
    create_rate: float
    p50: float
    p99: float
    max_latency: float
    span: float
    scheduled_attempts: float = math.nan
    failed_attempts: float = math.nan
    mean_attempt_seconds: float = math.nan
    """From the scheduler's own scheduler_scheduling_attempt_duration_seconds (sum / count)."""
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    """CPU used during the measured span, by process: the scheduler, the control plane, the client."""
    busy_before: float = math.nan
    idle_cpus: float = math.nan
    """What the settled, idle cluster kept busy at this size (``busy_before`` is compared with it)."""
    load_before: float = math.nan

    def cpu_ms_per_pod(self, process: str) -> float:
        seconds = self.cpu_seconds.get(process)
        return math.nan if seconds is None or not self.bound else 1000 * seconds / self.bound

    def add_span(
        self,
        cpu: tuple[Mapping[str, float], Mapping[str, float]],
        metrics: tuple[Mapping[str, float], Mapping[str, float]],
    ) -> None:
        """Record what the processes' CPU counters and the scheduler's own counters (each read
        ``(before, after)`` the measured span) moved by over it."""
        (cpu_before, cpu_after), (before, after) = cpu, metrics
        self.cpu_seconds = {name: cpu_after[name] - cpu_before[name] for name in cpu_after}
        self.scheduled_attempts = after["scheduled"] - before["scheduled"]
        self.failed_attempts = after["failed"] - before["failed"]
        attempts = after["duration_count"] - before["duration_count"]
        if attempts > 0:
            self.mean_attempt_seconds = (after["duration_sum"] - before["duration_sum"]) / attempts
