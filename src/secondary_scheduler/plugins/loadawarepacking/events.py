"""Warning Events when LoadAwarePacking places pods without fresh metrics for some nodes.

kube-scheduler reports on the pod it schedules (``regarding`` the pod, action ``Scheduling``);
a node's Events come from its kubelet and controllers. So the Event is on the pod whose
placement first rested on degraded metrics, once per episode (stale from the moment the
snapshot passes metricsStalenessLimit until a fetch succeeds; missing from the first node
without a reading until every scored node has one again), not on every pod: the note and the
``secsched_loadaware_degraded_nodes`` gauge say it for each cycle.
"""

from __future__ import annotations

from collections.abc import Sequence

from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.podinfo import PodInfo

WARNING = "Warning"
ACTION = "Scheduling"
METRICS_STALE = "LoadMetricsStale"
METRICS_MISSING = "LoadMetricsMissing"
_NAMED = 5
"""Nodes named in a missing-metrics Event; the rest are counted."""


class DegradedMetricsEvents:
    """Remembers which episodes were told, so that each is told once."""

    def __init__(self, handle: Handle, plugin: str) -> None:
        self.handle = handle
        self.plugin = plugin
        self._stale_told = False
        self._missing_told = False

    def stale(
        self, pod: PodInfo, is_stale: bool, source: str, age: float | None, limit: float | None
    ) -> None:
        if not is_stale:
            self._stale_told = False
            return
        if self._stale_told:
            return
        self._stale_told = True
        old = f"{age:.0f}s old" if age is not None else "old"
        bound = f" (metricsStalenessLimit {limit:g}s)" if limit is not None else ""
        self.handle.record_event(
            pod,
            WARNING,
            METRICS_STALE,
            ACTION,
            f"{self.plugin}: metrics from {source} are {old}{bound}: placed by each node's last peak, "
            "every pod bound since counted in full, until a fetch succeeds",
        )

    def missing(self, pod: PodInfo, nodes: Sequence[str], count: int, source: str, instead: str) -> None:
        """``count`` nodes lack a reading; ``nodes`` names some of them (at least the first few)."""
        if not count:
            self._missing_told = False
            return
        if self._missing_told:
            return
        self._missing_told = True
        more = count - min(len(nodes), _NAMED)
        named = ", ".join(nodes[:_NAMED]) + (f" and {more} more" if more > 0 else "")
        self.handle.record_event(
            pod,
            WARNING,
            METRICS_MISSING,
            ACTION,
            f"{self.plugin}: {count} node(s) without a CPU reading from {source} ({named}): {instead}",
        )
