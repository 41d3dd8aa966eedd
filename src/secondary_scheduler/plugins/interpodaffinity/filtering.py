"""Required inter-pod (anti-)affinity.

A node passes if, for each of the pod's required affinity terms, some pod the term selects
runs in the node's domain (the node must have every term's topology label). As an
exception, the first pod of a group whose terms select itself may go anywhere, so groups
can start. The node must hold no pod the pod's anti-affinity terms select in the same
domain, and the pod must not be selected by an existing pod's anti-affinity term whose
domain contains the node (symmetry).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.affinityterms import NamespaceLabels
from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.interface import Rejection
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.interpodaffinity.topology import (
    TopologyPair,
    add_pair,
    in_positive_domain,
    pods_in_reach,
)

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(frozen=True)
class FilterState:
    existing_anti_affinity: Counter[TopologyPair]
    """Domains where an existing pod's required anti-affinity selects the incoming pod."""
    affinity: Counter[TopologyPair]
    """Domains holding pods that all the incoming pod's required affinity terms select."""
    anti_affinity: Counter[TopologyPair]
    """Domains holding pods an incoming anti-affinity term selects (counted per term)."""


def filter_state(table: NodeTable, pod: PodInfo, namespace_labels: NamespaceLabels) -> FilterState:
    existing: Counter[TopologyPair] = Counter()
    for other, slot in table.pods_with_affinity():
        for term in other.required_anti_affinity_terms:
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                add_pair(existing, table.labels[slot], term.topology_key)
    affinity: Counter[TopologyPair] = Counter()
    anti_affinity: Counter[TopologyPair] = Counter()
    terms, anti_terms = pod.required_affinity_terms, pod.required_anti_affinity_terms
    if terms or anti_terms:
        for other, slot in pods_in_reach(table, (*terms, *anti_terms)):
            node_labels = table.labels[slot]
            if terms and all(term.matches(other.namespace, other.labels, namespace_labels) for term in terms):
                for term in terms:
                    add_pair(affinity, node_labels, term.topology_key)
            for term in anti_terms:
                if term.matches(other.namespace, other.labels, namespace_labels):
                    add_pair(anti_affinity, node_labels, term.topology_key)
    return FilterState(existing, affinity, anti_affinity)


def rejections(
    state: FilterState, table: NodeTable, pod: PodInfo, candidates: Slots, namespace_labels: NamespaceLabels
) -> list[Rejection]:
    """Affinity is checked first, then the pod's anti-affinity, then existing pods' anti-affinity."""
    count = len(candidates)
    labelled = np.ones(count, dtype=np.bool_)
    populated = np.ones(count, dtype=np.bool_)
    for term in pod.required_affinity_terms:
        labelled &= table.label_column(term.topology_key).codes[candidates] >= 0
        populated &= in_positive_domain(table, candidates, term.topology_key, state.affinity)
    first_of_group = not state.affinity and all(
        term.matches(pod.namespace, pod.labels, namespace_labels) for term in pod.required_affinity_terms
    )
    no_affinity = ~labelled if first_of_group else ~(labelled & populated)
    anti = np.zeros(count, dtype=np.bool_)
    for term in pod.required_anti_affinity_terms:
        anti |= in_positive_domain(table, candidates, term.topology_key, state.anti_affinity)
    anti &= ~no_affinity
    existing = np.zeros(count, dtype=np.bool_)
    for key in {key for key, _value in state.existing_anti_affinity}:
        existing |= in_positive_domain(table, candidates, key, state.existing_anti_affinity)
    existing &= ~no_affinity & ~anti
    return [
        Rejection(no_affinity, REASON_AFFINITY, unresolvable=True),
        Rejection(anti, REASON_ANTI_AFFINITY),
        Rejection(existing, REASON_EXISTING_ANTI_AFFINITY),
    ]
