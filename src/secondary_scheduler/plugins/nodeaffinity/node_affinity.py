"""Required node constraints filter, preferred ones score.

A node must match the pod's ``nodeSelector`` and one of its required node affinity terms,
and the profile's ``addedAffinity`` (args) if set, which applies to every pod on top of
its own. Each preferred term a node matches adds its weight; scores are then scaled so the
best node has 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.args import args_mapping
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PodPredicate,
    PreFilterPlugin,
    PreScorePlugin,
    Rejection,
    ScorePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodeselector import NodeSelector, parse_preferred_terms, preferred_score
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import default_normalize_score
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.plugins.nodeaffinity.args import NodeAffinityArgs

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "NodeAffinity"
    reads_node_pods: ClassVar[bool] = False
    args_model = NodeAffinityArgs

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._node_change_may_help
            ),
        )

    def _node_change_may_help(self, pod: PodInfo, old: Any, new: Any) -> bool:
        """As kube-scheduler's hint: only a node that now matches the pod's hard constraints (and
        the profile's addedAffinity) and did not before (or is new) can make the pod fit."""
        if new is None:
            return False
        if self.added_required is not None and not self.added_required.matches(new):
            return False
        required = pod.required_node_affinity
        if not required.matches(new):
            return False
        return old is None or not required.matches(old)

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        added = args_mapping(args).get("addedAffinity") or {}
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.added_required = NodeSelector.parse(required) if required is not None else None
        self.added_preferred = parse_preferred_terms(
            added.get("preferredDuringSchedulingIgnoredDuringExecution")
        )

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        if pod.required_node_affinity.is_empty and self.added_required is None:
            return SKIP
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        enforced = np.zeros(len(candidates), dtype=np.bool_)
        if self.added_required is not None:
            enforced = ~self.added_required.mask(table, candidates)
        own = ~enforced & ~pod.required_node_affinity.mask(table, candidates)
        return [
            Rejection(enforced, REASON_ENFORCED, unresolvable=True),
            Rejection(own, REASON_POD, unresolvable=True),
        ]

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        if not pod.preferred_node_affinity and not self.added_preferred:
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return preferred_score(pod.preferred_node_affinity, table, nodes) + preferred_score(
            self.added_preferred, table, nodes
        )

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return default_normalize_score(scores, reverse=False)
