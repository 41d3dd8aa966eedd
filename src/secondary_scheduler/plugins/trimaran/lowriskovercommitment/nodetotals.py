"""Per node, the requests and limits of its pods as LowRiskOverCommitment sums them.

The NodeTable tracks requests (with Kubernetes' sidecar rules) but not limits, and Trimaran
sums both its own way (``prescore``), so each node's totals are kept here and updated from
the difference between its pods now and when last seen: a cycle re-parses only pods that
arrived since.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.scoring import PodResources, prescore

REQUEST_CPU, REQUEST_MEMORY, LIMIT_CPU, LIMIT_MEMORY = range(4)


@dataclass
class _Node:
    pods: dict[str, PodInfo] = field(default_factory=dict)
    resources: dict[str, PodResources] = field(default_factory=dict)
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])

    def update(self, pods: dict[str, PodInfo]) -> None:
        for key in self.pods.keys() - pods.keys():
            self._count(self.resources.pop(key), -1)
        for key, pod in pods.items():
            if self.pods.get(key) is not pod:
                if key in self.resources:
                    self._count(self.resources[key], -1)
                self.resources[key] = prescore(pod.obj)
                self._count(self.resources[key], 1)
        self.pods = dict(pods)

    def _count(self, resources: PodResources, sign: int) -> None:
        self.totals[REQUEST_CPU] += sign * resources.requests.milli_cpu
        self.totals[REQUEST_MEMORY] += sign * resources.requests.memory
        self.totals[LIMIT_CPU] += sign * resources.limits.milli_cpu
        self.totals[LIMIT_MEMORY] += sign * resources.limits.memory


class NodeTotals:
    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._nodes: dict[int, _Node] = {}

    def of(self, table: NodeTable, nodes: Slots) -> IntArray:
        """Shape (nodes, 4): requests cpu, memory, limits cpu, memory (columns REQUEST_CPU...)."""
        if table is not self._table:
            self._table, self._nodes = table, {}
        totals = np.empty((len(nodes), 4), dtype=np.int64)
        for row, slot in enumerate(nodes.tolist()):
            pods = table.pods[slot]
            node = self._nodes.get(slot)
            if node is None:
                node = self._nodes[slot] = _Node()
            if node.pods != pods:
                node.update(pods)
            totals[row] = node.totals
        return totals
