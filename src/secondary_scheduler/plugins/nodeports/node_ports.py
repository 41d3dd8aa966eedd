"""Rejects nodes where a host port the pod wants is already in use (see ``hostports.conflicts``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.hostports import conflicts
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PodPredicate,
    PreFilterPlugin,
    Rejection,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status

REASON = "node(s) didn't have free ports for the requested pod ports"


class NodePorts(PreFilterPlugin, FilterPlugin):
    name: ClassVar[str] = "NodePorts"
    reads_node_pods: ClassVar[bool] = False

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        )

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        return SUCCESS if pod.host_ports else SKIP

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        if not pod.host_ports:
            return []
        used = table.used_ports
        taken = (bool(used[slot]) and conflicts(pod.host_ports, used[slot]) for slot in candidates.tolist())
        return [Rejection(np.fromiter(taken, dtype=np.bool_, count=len(candidates)), REASON)]
