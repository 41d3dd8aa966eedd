"""Rejects every node but the one named in the pod's ``spec.nodeName``, if it names one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.interface import CycleState, FilterPlugin, Rejection
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo

REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin):
    name: ClassVar[str] = "NodeName"
    reads_node_pods: ClassVar[bool] = False

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),)

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        if not pod.node_name:
            return []
        wanted = table.slot_of(pod.node_name)
        return [Rejection(candidates != (-1 if wanted is None else wanted), REASON, unresolvable=True)]
