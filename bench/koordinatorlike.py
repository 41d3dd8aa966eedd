"""A Koordinator-like LoadAwareScheduling, for comparison only (not shipped as ours).

Written from Koordinator's public documentation of its LoadAwareScheduling plugin (design
doc ``docs/proposals/scheduling/20220510-load-aware-scheduling.md``; see
docs/koordinator-like.md for what is reproduced and what is not):

- Filter: reject a node whose usage, in percent of allocatable, is above
  ``usageThresholds`` (cpu 65, memory 95 by default).
- Score: least-used, weighted by ``resourceWeights``: per resource
  ``(allocatable - estimated used) / allocatable * 100``, where estimated used is the node's
  reported usage plus every pod assigned after the usage was reported, each estimated from
  its requests x ``estimatedScalingFactors`` percent (cpu 85, memory 70), or its limits.
- Metrics older than ``nodeMetricExpirationSeconds`` are not used: the node scores 0, and
  with ``filterExpiredNodeMetrics`` the Filter lets it through (as the docs describe).

Koordinator reads koordlet's NodeMetric objects; here it reads the same Trimaran collectors as
every load-aware profile of this project (so the comparison is about the policy, not the
agent). Load it with ``--plugin bench.koordinatorlike:LoadAwareScheduling`` from the
repository root (PYTHONPATH=.).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import CycleState, FilterPlugin, Rejection, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import CPU_COLUMN, MEMORY_COLUMN
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs
from secondary_scheduler.plugins.trimaran.nodeusage import NodeUsage
from secondary_scheduler.plugins.trimaran.pluginbase import TrimaranPlugin
from secondary_scheduler.plugins.trimaran.resourcestats import pod_limits, pod_requests

RESOURCES = ("cpu", "memory")


class LoadAwareSchedulingArgs(TrimaranArgs):
    filter_expired_node_metrics: bool = True
    node_metric_expiration_seconds: int = Field(180, gt=0)
    resource_weights: dict[str, int] = Field(default_factory=lambda: {"cpu": 1, "memory": 1})
    usage_thresholds: dict[str, int] = Field(default_factory=lambda: {"cpu": 65, "memory": 95})
    estimated_scaling_factors: dict[str, int] = Field(default_factory=lambda: {"cpu": 85, "memory": 70})


class LoadAwareScheduling(TrimaranPlugin, FilterPlugin, ScorePlugin):
    name: ClassVar[str] = "LoadAwareScheduling"
    args_model = LoadAwareSchedulingArgs

    def __init__(self, args: LoadAwareSchedulingArgs, handle: object) -> None:
        super().__init__(args, handle)  # type: ignore[arg-type]
        for field in ("resource_weights", "usage_thresholds", "estimated_scaling_factors"):
            unknown = set(getattr(args, field)) - set(RESOURCES)
            if unknown:
                raise ValueError(f"{field}: only cpu and memory are supported, got {sorted(unknown)}")
        self.args = args

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return ()

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        usage = self.usage(table, candidates)
        if self._expired(usage):
            return []  # filterExpiredNodeMetrics: expired metrics do not keep pods off a node
        used, allocatable = self._used(usage, table, candidates, with_assigned=False)
        rejected = np.zeros(len(candidates), dtype=np.bool_)
        for column, resource in enumerate(RESOURCES):
            threshold = self.args.usage_thresholds.get(resource)
            if threshold:
                percent = np.where(
                    allocatable[:, column] > 0, 100 * used[:, column] / allocatable[:, column], 0
                )
                rejected |= usage.has_metrics & (percent > threshold)
        return (
            [Rejection(rejected, f"node(s) {self.name}: usage over usageThresholds")]
            if rejected.any()
            else []
        )

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        usage = self.usage(table, nodes)
        if self._expired(usage):
            return np.zeros(len(nodes), dtype=np.int64)
        used, allocatable = self._used(usage, table, nodes, with_assigned=True)
        used = used + self._estimate(pod.obj)
        total, weights = np.zeros(len(nodes)), 0
        for column, resource in enumerate(RESOURCES):
            weight = self.args.resource_weights.get(resource, 0)
            cap = allocatable[:, column]
            free = np.where(
                cap > 0, np.clip(cap - used[:, column], 0, None) * 100 / np.where(cap > 0, cap, 1), 0
            )
            total += weight * free
            weights += weight
        scores = np.floor(total / max(weights, 1)).astype(np.int64)
        return np.where(usage.has_metrics, scores, 0)

    def _expired(self, usage: NodeUsage) -> bool:
        return usage.age_seconds is None or usage.age_seconds > self.args.node_metric_expiration_seconds

    def _used(
        self, usage: NodeUsage, table: NodeTable, nodes: Slots, with_assigned: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Reported usage (and, for Score, pods assigned since it was reported) and allocatable."""
        allocatable = table.allocatable[nodes][:, [CPU_COLUMN, MEMORY_COLUMN]].astype(np.float64)
        used = np.stack([usage.cpu.avg, usage.memory.avg], axis=1) * allocatable / 100.0
        if with_assigned and usage.snapshot is not None:
            reported = usage.snapshot.taken_at
            recent = self.services.recently_scheduled
            for node, entries in recent.on_nodes():
                slot = table.slot_of(node)
                if slot is None:
                    continue
                where = np.flatnonzero(nodes == slot)
                if not len(where):
                    continue
                for entry in entries:
                    if entry.bound_at is not None and entry.bound_at > reported:
                        used[where[0]] += self._estimate(entry.pod)
        return used, allocatable

    def _estimate(self, pod: object) -> np.ndarray:
        """A pod's usage as Koordinator estimates it: limits if set, else requests x scaling factor."""
        requests, limits = pod_requests(pod), pod_limits(pod)  # type: ignore[arg-type]
        factors = self.args.estimated_scaling_factors
        cpu = limits.milli_cpu or requests.milli_cpu * factors.get("cpu", 100) / 100
        memory = limits.memory or requests.memory * factors.get("memory", 100) / 100
        return np.array([cpu, memory], dtype=np.float64)
