"""Required node constraints filter, preferred ones score.

A node must match the pod's ``nodeSelector`` and one of its required node affinity terms,
and the profile's ``addedAffinity`` (args) if set, which applies to every pod on top of
its own. Each preferred term a node matches adds its weight; scores are then scaled so the
best node has 100.

PreFilter narrows the nodes to those the required terms name (``matchFields metadata.name
In``, how a DaemonSet pins each pod): the framework filters only those, and terms naming
conflicting nodes reject the pod at once ("pod affinity terms conflict"), as upstream's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, KubeObject, Slots
from secondary_scheduler.framework.args import args_mapping
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PodPredicate,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    Rejection,
    ScorePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodeselector import (
    NODE_NAME_FIELD,
    NodeSelector,
    parse_preferred_terms,
    preferred_score,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import default_normalize_score
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.plugins.nodeaffinity.args import NodeAffinityArgs

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"


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

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status | PreFilterResult:
        if pod.required_node_affinity.is_empty and self.added_required is None:
            return SKIP
        names = nodes_named_by_terms(pod.obj)
        if names is None:
            return SUCCESS
        if not names:
            return Status.unschedulable(REASON_CONFLICT, unresolvable=True)
        return PreFilterResult(names)

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


def nodes_named_by_terms(pod: KubeObject) -> frozenset[str] | None:
    """The only nodes the pod's required node affinity terms can match by name, as upstream's
    PreFilter reads them: a term's ``matchFields metadata.name In`` values (intersected within the
    term), united over the terms; None when some term names no node (it may match any node).

    An empty set means every term names conflicting nodes. The raw spec is read, not the parsed
    terms: upstream narrows on a term even when its Filter cannot parse it (several values).
    """
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    terms = required.get("nodeSelectorTerms") or ()
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        in_term: set[str] | None = None
        for requirement in (term or {}).get("matchFields") or ():
            if requirement.get("key") == NODE_NAME_FIELD and requirement.get("operator") == "In":
                values = {str(value) for value in requirement.get("values") or ()}
                in_term = values if in_term is None else in_term & values
        if in_term is None:
            return None
        names |= in_term
    return frozenset(names)
