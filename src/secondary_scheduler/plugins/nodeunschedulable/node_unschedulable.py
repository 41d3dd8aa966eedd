"""Rejects nodes with ``spec.unschedulable`` unless the pod tolerates the unschedulable taint.

The toleration is checked against ``node.kubernetes.io/unschedulable:NoSchedule`` itself,
not against the node's taints, so it works before the node controller adds that taint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.interface import CycleState, FilterPlugin, Rejection
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.taints import NO_SCHEDULE, UNSCHEDULABLE_TAINT_KEY, Taint, tolerated

REASON = "node(s) were unschedulable"
_UNSCHEDULABLE_TAINT = Taint(UNSCHEDULABLE_TAINT_KEY, "", NO_SCHEDULE)


class NodeUnschedulable(FilterPlugin):
    name: ClassVar[str] = "NodeUnschedulable"
    reads_node_pods: ClassVar[bool] = False

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``spec.unschedulable`` counts as a taint change, as upstream classifies it."""
        return (ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)),)

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        if tolerated(_UNSCHEDULABLE_TAINT, pod.tolerations):
            return []
        return [Rejection(table.unschedulable[candidates], REASON, unresolvable=True)]
