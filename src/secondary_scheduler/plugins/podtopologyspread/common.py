"""Counting matching pods per node and deciding which nodes a constraint counts at all."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.labels import LabelSelector
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import HONOR, PodInfo, SpreadConstraint
from secondary_scheduler.framework.taints import DO_NOT_SCHEDULE_EFFECTS, has_untolerated

HOSTNAME_LABEL = "kubernetes.io/hostname"
INDEX_NAME = "PodTopologySpread"
MAX_SELECTORS = 64


class MatchingPods:
    """Per slot, the pods of the incoming pod's namespace that a selector matches.

    Terminating pods do not count, and an empty selector (``{}``) counts no pod, as in
    kube-scheduler. The counts come from the table's ``SpreadIndex``, kept up to date as pods
    come and go, so a cycle does not walk the namespace's pods.
    """

    def __init__(self, table: NodeTable, namespace: str) -> None:
        self._table = table
        self._namespace = namespace

    def per_slot(self, selector: LabelSelector) -> IntArray:
        """A copy: the cycle's view stays as it was if the table changes later (preemption's dry runs)."""
        if selector.is_empty:
            return np.zeros(self._table.capacity, dtype=np.int64)
        return spread_index(self._table).counts(self._namespace, selector).copy()


class SpreadIndex:
    """Matching pods per slot for each (namespace, selector) asked for recently, kept up to date.

    Built on first use by walking the namespace's pods, then updated as the table places and
    removes pods; past ``MAX_SELECTORS`` the least recently used is dropped.
    """

    def __init__(self, table: NodeTable) -> None:
        self._table = table
        self._counts: OrderedDict[tuple[str, LabelSelector], IntArray] = OrderedDict()
        self._by_namespace: dict[str, set[LabelSelector]] = {}

    def counts(self, namespace: str, selector: LabelSelector) -> IntArray:
        key = (namespace, selector)
        counts = self._counts.get(key)
        if counts is not None:
            self._counts.move_to_end(key)
            if len(counts) < self._table.capacity:
                counts = self._counts[key] = _grown(counts, self._table.capacity)
            return counts
        counts = np.zeros(self._table.capacity, dtype=np.int64)
        for pod, slot in self._table.pods_in_namespace(namespace):
            if not pod.terminating and selector.matches(pod.labels):
                counts[slot] += 1
        self._counts[key] = counts
        self._by_namespace.setdefault(namespace, set()).add(selector)
        if len(self._counts) > MAX_SELECTORS:
            (old_namespace, old_selector), _ = self._counts.popitem(last=False)
            selectors = self._by_namespace[old_namespace]
            selectors.discard(old_selector)
            if not selectors:
                del self._by_namespace[old_namespace]
        return counts

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._update(slot, pod, 1)

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._update(slot, pod, -1)

    def _update(self, slot: int, pod: PodInfo, amount: int) -> None:
        if pod.terminating:
            return
        for selector in self._by_namespace.get(pod.namespace, ()):
            if selector.matches(pod.labels):
                key = (pod.namespace, selector)
                counts = self._counts[key]
                if slot >= len(counts):
                    counts = self._counts[key] = _grown(counts, self._table.capacity)
                counts[slot] += amount


def _grown(counts: IntArray, capacity: int) -> IntArray:
    return np.concatenate([counts, np.zeros(capacity - len(counts), dtype=np.int64)])


def spread_index(table: NodeTable) -> SpreadIndex:
    return table.index(INDEX_NAME, SpreadIndex)


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
        for position in np.flatnonzero(table.tainted[slots]).tolist():
            if has_untolerated(table.taints[slots[position]], pod.tolerations, DO_NOT_SCHEDULE_EFFECTS):
                mask[position] = False
    return mask
