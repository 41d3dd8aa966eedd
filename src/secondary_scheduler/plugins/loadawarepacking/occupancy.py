"""Which nodes are in use: those holding a workload pod (DaemonSet and static pods do not count).

Opening a node costs the cluster a whole node (issue 38 counts nodes in use against
TargetLoadPacking's); a node every DaemonSet already runs on is no less empty for it. The
index follows the NodeTable as ``InFlightPods`` does, so a cycle reads one array.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo

INDEX_NAME = "loadawarepacking/workload"
"""One index per table, whatever the profiles: what it counts depends on no plugin argument."""
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
"""Set by the kubelet on the API's copy of a static pod (kube-proxy, control-plane parts)."""


def is_node_service(pod: PodInfo) -> bool:
    """A pod that runs on every node (or on this one by its kubelet's files), not a workload."""
    metadata = pod.obj.get("metadata") or {}
    if MIRROR_ANNOTATION in (metadata.get("annotations") or {}):
        return True
    return any(
        owner.get("controller") and owner.get("kind") == "DaemonSet"
        for owner in metadata.get("ownerReferences") or ()
    )


class WorkloadPods:
    """Per table slot, how many workload pods are placed there (bound or assumed)."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.count: IntArray = np.zeros(table.capacity, dtype=np.int64)
        for pod, slot in table.all_pods():
            self.pod_placed(slot, pod, {})

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        if not is_node_service(pod):
            self._fit()
            self.count[slot] += 1

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        if not is_node_service(pod):
            self._fit()
            self.count[slot] = max(0, int(self.count[slot]) - 1)

    def empty(self, nodes: Slots) -> BoolArray:
        """Which of ``nodes`` (slots of the table) hold no workload pod."""
        self._fit()
        return self.count[nodes] == 0

    def _fit(self) -> None:
        """Grow with the table (slots are always below its capacity)."""
        size = self.table.capacity
        if len(self.count) < size:
            grown = np.zeros(size, dtype=np.int64)
            grown[: len(self.count)] = self.count
            self.count = grown


def workload_pods(table: NodeTable) -> WorkloadPods:
    """The table's ``WorkloadPods``, built on first use."""
    return table.index(INDEX_NAME, WorkloadPods)
