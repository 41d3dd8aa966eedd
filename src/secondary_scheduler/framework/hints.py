"""Queueing hints shared by the plugins whose verdict depends on other pods' labels.

A pending pod rejected for inter-pod affinity or topology spreading can only be helped by
an assigned pod it "sees": one its terms or spread selectors would count. Without these
hints every binding in the cluster would send every such pod back to the queue.
"""

from __future__ import annotations

from secondary_scheduler.framework.affinityterms import NamespaceLabels
from secondary_scheduler.framework.podinfo import PodInfo


def affinity_change_may_help(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None, namespace_labels: NamespaceLabels
) -> bool:
    """Whether an assigned pod's add, relabel or delete may let ``pod``'s inter-pod (anti-)affinity pass."""

    def satisfies_affinity(other: PodInfo | None) -> bool:
        return other is not None and any(
            term.matches(other.namespace, other.labels, namespace_labels)
            for term in pod.required_affinity_terms
        )

    def conflicts(other: PodInfo | None) -> bool:
        """``other`` blocks ``pod`` by anti-affinity, in either direction."""
        if other is None:
            return False
        mine = any(
            term.matches(other.namespace, other.labels, namespace_labels)
            for term in pod.required_anti_affinity_terms
        )
        theirs = any(
            term.matches(pod.namespace, pod.labels, namespace_labels)
            for term in other.required_anti_affinity_terms
        )
        return mine or theirs

    return (satisfies_affinity(new) and not satisfies_affinity(old)) or (
        conflicts(old) and not conflicts(new)
    )


def spread_change_may_help(pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> bool:
    """Whether an assigned pod's add, relabel or delete changes a count ``pod``'s spread constraints read."""

    def counted(other: PodInfo | None) -> bool:
        return (
            other is not None
            and other.namespace == pod.namespace
            and any(constraint.selector.matches(other.labels) for constraint in pod.spread_constraints)
        )

    return counted(old) or counted(new)
