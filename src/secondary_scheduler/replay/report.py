"""What a profile did over a replay: the measures, taken every minute of simulated time, and their report.

Node CPU is a fraction of the node's capacity (1.0: every core busy; above 1 when the pods' use
exceeds it). The measures:

- node-minutes over target: for each minute, the nodes whose CPU is over the target, summed;
- VM-minutes on nodes over target (and over 90 %): for each minute, the replayed pods on such nodes;
- p50/p95/p99/max node CPU: over every minute of every node in use (a node with a pod on it);
- CPU spread: the standard deviation of CPU across the nodes in use, averaged over the minutes;
- mean nodes in use: the nodes with a pod on them, averaged over the minutes (the cost side);
- pods that waited and for how long; unschedulable pods (never bound before they left or the trace
  ended); preemptions (pods evicted); decisions (scheduling cycles) and decisions per wall second.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from secondary_scheduler.framework.aliases import FloatArray
from secondary_scheduler.replay.cluster import ClusterLoad

SATURATED = 0.9
"""The CPU fraction the report calls saturated (VM-minutes above 90 %)."""
BIN_WIDTH = 0.001
BINS = 4000
"""The histogram of node CPU: 0.1 % bins up to 400 % (overcommitted nodes), the last bin open."""
MAX_HEAT_COLUMNS = 720
"""The heat map keeps at most twice this many columns; past that, neighbours are averaged."""


@dataclass
class HeatMap:
    """Node CPU over time, one column per ``width`` seconds, halved in resolution as the replay grows."""

    width: float
    columns: list[FloatArray] = field(default_factory=list)
    _sum: FloatArray | None = None
    _count: int = 0
    _column_start: float = 0.0

    def add(self, now: float, cpu: FloatArray) -> None:
        if self._sum is not None and now >= self._column_start + self.width:
            self._close()
        if self._sum is None:
            self._sum = np.zeros_like(cpu)
            self._column_start = now - (now % self.width)
        self._sum += cpu
        self._count += 1

    def finish(self) -> FloatArray:
        """Nodes × columns (an empty array when nothing was measured)."""
        if self._sum is not None:
            self._close()
        if not self.columns:
            return np.zeros((0, 0))
        return np.stack(self.columns, axis=1)

    def _close(self) -> None:
        assert self._sum is not None
        self.columns.append(self._sum / max(self._count, 1))
        self._sum, self._count = None, 0
        if len(self.columns) >= 2 * MAX_HEAT_COLUMNS:
            pairs = zip(self.columns[0::2], self.columns[1::2], strict=False)
            self.columns = [(a + b) / 2 for a, b in pairs]
            self.width *= 2


@dataclass(frozen=True)
class Timeline:
    """Per measurement: its time (s), the nodes in use and the nodes over the target."""

    times: list[float]
    nodes_in_use: list[int]
    nodes_over_target: list[int]


@dataclass(frozen=True)
class ProfileResult:
    name: str
    config: str
    """The configuration file the profile comes from."""
    node_minutes_over_target: float
    vm_minutes_over_target: float
    vm_minutes_over_saturation: float
    p50_node_cpu: float
    p95_node_cpu: float
    p99_node_cpu: float
    max_node_cpu: float
    cpu_spread: float
    mean_nodes_in_use: float
    waited_pods: int
    mean_wait_seconds: float
    max_wait_seconds: float
    unschedulable_pods: int
    preemptions: int
    decisions: int
    seconds: float
    """Wall-clock seconds the replay of this profile took."""
    simulated_seconds: float
    metric_sources: tuple[str, ...]
    heat: FloatArray = field(repr=False, compare=False)
    heat_width: float = field(repr=False, compare=False)
    """Seconds per heat map column."""
    histogram: FloatArray = field(repr=False, compare=False)
    """Node-minutes per CPU bin (``BIN_WIDTH`` wide), over nodes in use."""
    timeline: Timeline = field(repr=False, compare=False)

    @property
    def decisions_per_second(self) -> float:
        return self.decisions / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "config": self.config,
            "nodeMinutesOverTarget": round(self.node_minutes_over_target, 3),
            "vmMinutesOnNodesOverTarget": round(self.vm_minutes_over_target, 3),
            "vmMinutesOnNodesOver90": round(self.vm_minutes_over_saturation, 3),
            "p50NodeCpu": round(self.p50_node_cpu, 4),
            "p95NodeCpu": round(self.p95_node_cpu, 4),
            "p99NodeCpu": round(self.p99_node_cpu, 4),
            "maxNodeCpu": round(self.max_node_cpu, 4),
            "cpuSpread": round(self.cpu_spread, 4),
            "meanNodesInUse": round(self.mean_nodes_in_use, 3),
            "waitedPods": self.waited_pods,
            "meanWaitSeconds": round(self.mean_wait_seconds, 3),
            "maxWaitSeconds": round(self.max_wait_seconds, 3),
            "unschedulablePods": self.unschedulable_pods,
            "preemptions": self.preemptions,
            "decisions": self.decisions,
            "decisionsPerSecond": round(self.decisions_per_second, 1),
            "wallSeconds": round(self.seconds, 3),
            "simulatedSeconds": self.simulated_seconds,
            "metricSources": list(self.metric_sources),
        }


class Measures:
    """Takes the measures of one profile's replay, one ``tick`` per measurement interval."""

    def __init__(self, load: ClusterLoad, target: float, interval: float) -> None:
        self.load = load
        self.target = target
        self.interval = interval
        self.histogram = np.zeros(BINS, dtype=np.float64)
        self.max_cpu = 0.0
        self.node_minutes_over_target = 0.0
        self.vm_minutes_over_target = 0.0
        self.vm_minutes_over_saturation = 0.0
        self._spread_sum = 0.0
        self._in_use_sum = 0.0
        self._ticks = 0
        self._last: float | None = None
        self.heat = HeatMap(width=interval)
        self._times: list[float] = []
        self._in_use: list[int] = []
        self._over: list[int] = []

    def tick(self, now: float) -> None:
        """The cluster as it is now holds until the next tick: count it for one interval."""
        if self._last is not None and now <= self._last:
            return
        self._last = now
        minutes = self.interval / 60
        cpu = self.load.cpu_utilization()
        in_use = self.load.in_use()
        over = cpu > self.target
        vms = self.load.pod_count
        nodes_over = int(np.count_nonzero(over))
        self.node_minutes_over_target += nodes_over * minutes
        if nodes_over:
            self.vm_minutes_over_target += int(vms[over].sum()) * minutes
        saturated = cpu > SATURATED
        if saturated.any():
            self.vm_minutes_over_saturation += int(vms[saturated].sum()) * minutes
        used = cpu[in_use]
        if len(used):
            bins = np.minimum((used / BIN_WIDTH).astype(np.int64), BINS - 1)
            self.histogram += np.bincount(bins, minlength=BINS) * minutes
            self.max_cpu = max(self.max_cpu, float(used.max()))
            mean = float(used.mean())
            self._spread_sum += math.sqrt(max(float(np.dot(used, used)) / len(used) - mean * mean, 0.0))
        self._in_use_sum += len(used)
        self._ticks += 1
        self.heat.add(now, cpu)
        self._times.append(now)
        self._in_use.append(len(used))
        self._over.append(nodes_over)

    def result(
        self,
        *,
        name: str,
        decisions: int,
        seconds: float,
        waits: Sequence[float],
        unschedulable: int,
        preempted: int,
        sources: Sequence[str],
        duration: float,
        config: str = "",
    ) -> ProfileResult:
        ticks = max(self._ticks, 1)
        heat = self.heat.finish()
        return ProfileResult(
            name=name,
            config=config,
            node_minutes_over_target=self.node_minutes_over_target,
            vm_minutes_over_target=self.vm_minutes_over_target,
            vm_minutes_over_saturation=self.vm_minutes_over_saturation,
            p50_node_cpu=percentile(self.histogram, 0.50),
            p95_node_cpu=percentile(self.histogram, 0.95),
            p99_node_cpu=percentile(self.histogram, 0.99),
            max_node_cpu=self.max_cpu,
            cpu_spread=self._spread_sum / ticks,
            mean_nodes_in_use=self._in_use_sum / ticks,
            waited_pods=len(waits),
            mean_wait_seconds=float(np.mean(waits)) if len(waits) else 0.0,
            max_wait_seconds=float(np.max(waits)) if len(waits) else 0.0,
            unschedulable_pods=unschedulable,
            preemptions=preempted,
            decisions=decisions,
            seconds=seconds,
            simulated_seconds=duration,
            metric_sources=tuple(sources),
            heat=heat,
            heat_width=self.heat.width,
            histogram=self.histogram,
            timeline=Timeline(self._times, self._in_use, self._over),
        )


def percentile(histogram: FloatArray, quantile: float) -> float:
    """The CPU fraction below which ``quantile`` of the histogram's node-minutes lie (a bin's upper edge)."""
    total = float(histogram.sum())
    if total <= 0:
        return 0.0
    cumulative = np.cumsum(histogram)
    index = int(np.searchsorted(cumulative, quantile * total - 1e-9 * total))
    return min(index + 1, BINS) * BIN_WIDTH


def report_json(target: float, results: Sequence[ProfileResult]) -> str:
    return json.dumps({"target": target, "profiles": [result.as_json() for result in results]}, indent=2)


def print_table(target: float, results: Sequence[ProfileResult], trace: str, cluster: str) -> None:
    """The profiles side by side in a rich table (rich is the ``cli`` extra: imported here only)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    table = Table(title=f"Replay of {trace} over {cluster} (target {target:.0%})", show_edge=False)
    table.add_column("measure")
    for result in results:
        table.add_column(f"{result.name}\n({result.config})", justify="right")
    rows: list[tuple[str, list[str]]] = [
        ("node-minutes over target", [f"{r.node_minutes_over_target:,.0f}" for r in results]),
        ("VM-minutes on nodes over target", [f"{r.vm_minutes_over_target:,.0f}" for r in results]),
        ("VM-minutes on nodes over 90 %", [f"{r.vm_minutes_over_saturation:,.0f}" for r in results]),
        ("node CPU p50 / p95 / p99", [_percentiles(r) for r in results]),
        ("node CPU max", [f"{r.max_node_cpu:.0%}" for r in results]),
        ("CPU spread across nodes (std)", [f"{r.cpu_spread:.1%}" for r in results]),
        ("nodes in use (mean)", [f"{r.mean_nodes_in_use:,.1f}" for r in results]),
        ("pods that waited (mean / max wait)", [_waits(r) for r in results]),
        ("unschedulable pods", [str(r.unschedulable_pods) for r in results]),
        ("preemptions", [str(r.preemptions) for r in results]),
        (
            "decisions (per wall second)",
            [f"{r.decisions:,} ({r.decisions_per_second:,.0f}/s)" for r in results],
        ),
        ("metrics from (simulated)", [", ".join(r.metric_sources) or "-" for r in results]),
    ]
    for label, cells in rows:
        table.add_row(label, *cells)
    console.print(table)
    console.print(
        "[dim]Node CPU is use over capacity, measured every simulated minute on nodes with a pod; "
        "docs/replay.md says what each measure means.[/dim]"
    )


def _percentiles(result: ProfileResult) -> str:
    return f"{result.p50_node_cpu:.0%} / {result.p95_node_cpu:.0%} / {result.p99_node_cpu:.0%}"


def _waits(result: ProfileResult) -> str:
    if not result.waited_pods:
        return "0"
    return f"{result.waited_pods} ({result.mean_wait_seconds:,.0f} s / {result.max_wait_seconds:,.0f} s)"
