"""Counting matching pods per node and deciding which nodes a constraint counts at all."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.labels import LabelSelector
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import HONOR, PodInfo, SpreadConstraint
from secondary_scheduler.framework.taints import DO_NOT_SCHEDULE_EFFECTS, has_untolerated

HOSTNAME_LABEL = "kubernetes.io/hostname"


class MatchingPods:
    """Per slot, the pods of the incoming pod's namespace that a selector matches.

    Counting walks every pod of the namespace, and Filter and Score usually ask for the same
    selectors, so each selector is counted once per scheduling cycle. Terminating pods do not
    count, and an empty selector (``{}``) counts no pod, as in kube-scheduler.
    """

    def __init__(self, table: NodeTable, namespace: str) -> None:
        self._table = table
        self._namespace = namespace
        self._counts: dict[LabelSelector, IntArray] = {}

    def per_slot(self, selector: LabelSelector) -> IntArray:
        counts = self._counts.get(selector)
        if counts is None:
            counts = np.zeros(self._table.capacity, dtype=np.int64)
            if not selector.is_empty:
                for pod, slot in self._table.pods_in_namespace(self._namespace):
                    if not pod.terminating and selector.matches(pod.labels):
                        counts[slot] += 1
            self._counts[selector] = counts
        return counts


def have_all_keys(table: NodeTable, slots: Slots, constraints: Sequence[SpreadConstraint]) -> BoolArray:
    """Nodes carrying every constraint's topology label: the only ones spreading looks at."""
    mask = np.ones(len(slots), dtype=np.bool_)
    for constraint in constraints:
        mask &= table.label_column(constraint.topology_key).codes[slots] >= 0
    return mask


def included(table: NodeTable, slots: Slots, pod: PodInfo, constraint: SpreadConstraint) -> BoolArray:
    """nodeAffinityPolicy/nodeTaintsPolicy: with Honor, nodes the pod could not go to do not count."""
    mask = np.ones(len(slots), dtype=np.bool_)
    if constraint.node_affinity_policy == HONOR:
        mask &= pod.required_node_affinity.mask(table, slots)
    if constraint.node_taints_policy == HONOR:
        repelled = (
            has_untolerated(table.taints[slot], pod.tolerations, DO_NOT_SCHEDULE_EFFECTS)
            for slot in slots.tolist()
        )
        mask &= ~np.fromiter(repelled, dtype=np.bool_, count=len(slots))
    return mask
