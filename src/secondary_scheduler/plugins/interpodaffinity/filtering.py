"""Required inter-pod (anti-)affinity.

A node passes if, for each of the pod's required affinity terms, some pod the term selects
runs in the node's domain (the node must have every term's topology label). As an
exception, the first pod of a group whose terms select itself may go anywhere, so groups
can start. The node must hold no pod the pod's anti-affinity terms select in the same
domain, and the pod must not be selected by an existing pod's anti-affinity term whose
domain contains the node (symmetry).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.affinityterms import AffinityTerm, NamespaceLabels
from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.interface import Rejection
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.interpodaffinity.index import affinity_index, cacheable
from secondary_scheduler.plugins.interpodaffinity.topology import Domains, add_domains, pods_in_reach

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(frozen=True)
class FilterState:
    existing_anti_affinity: Domains
    """Domains where an existing pod's required anti-affinity selects the incoming pod."""
    affinity: Domains
    """Domains holding pods that all the incoming pod's required affinity terms select."""
    anti_affinity: Domains
    """Domains holding pods an incoming anti-affinity term selects."""


def filter_state(table: NodeTable, pod: PodInfo, namespace_labels: NamespaceLabels) -> FilterState:
    """The domains each rule rules in or out, from the table's index (copied: the state outlives changes)."""
    index = affinity_index(table)
    existing: Domains = {}
    for term, counts in index.required_anti_affinity.items():
        if counts and term.matches(pod.namespace, pod.labels, namespace_labels):
            add_domains(existing, term.topology_key, counts)
    affinity: Domains = {}
    terms = pod.required_affinity_terms
    if terms:
        _selected(affinity, table, terms, namespace_labels)
    anti_affinity: Domains = {}
    for term in pod.required_anti_affinity_terms:
        _selected(anti_affinity, table, (term,), namespace_labels)
    return FilterState(existing, affinity, anti_affinity)


def _selected(
    domains: Domains, table: NodeTable, terms: tuple[AffinityTerm, ...], namespace_labels: NamespaceLabels
) -> None:
    """Add the domains (of each term's key) of the placed pods that all ``terms`` select."""
    if cacheable(terms):
        for key, counts in affinity_index(table).selection(terms).counts.items():
            add_domains(domains, key, counts)
        return
    for other, slot in pods_in_reach(table, terms):
        if all(term.matches(other.namespace, other.labels, namespace_labels) for term in terms):
            node_labels = table.labels[slot]
            for term in terms:
                value = node_labels.get(term.topology_key)
                if value is not None:
                    domains.setdefault(term.topology_key, set()).add(value)


def rejections(
    state: FilterState, table: NodeTable, pod: PodInfo, candidates: Slots, namespace_labels: NamespaceLabels
) -> list[Rejection]:
    """Affinity is checked first, then the pod's anti-affinity, then existing pods' anti-affinity."""
    count = len(candidates)
    labelled = np.ones(count, dtype=np.bool_)
    populated = np.ones(count, dtype=np.bool_)
    for term in pod.required_affinity_terms:
        column = table.label_column(term.topology_key)
        labelled &= column.codes[candidates] >= 0
        populated &= column.isin(candidates, state.affinity.get(term.topology_key, ()))
    first_of_group = not state.affinity and all(
        term.matches(pod.namespace, pod.labels, namespace_labels) for term in pod.required_affinity_terms
    )
    no_affinity = ~labelled if first_of_group else ~(labelled & populated)
    anti = np.zeros(count, dtype=np.bool_)
    for key, values in state.anti_affinity.items():
        anti |= table.label_column(key).isin(candidates, values)
    anti &= ~no_affinity
    existing = np.zeros(count, dtype=np.bool_)
    for key, values in state.existing_anti_affinity.items():
        existing |= table.label_column(key).isin(candidates, values)
    existing &= ~no_affinity & ~anti
    return [
        Rejection(no_affinity, REASON_AFFINITY, unresolvable=True),
        Rejection(anti, REASON_ANTI_AFFINITY),
        Rejection(existing, REASON_EXISTING_ANTI_AFFINITY),
    ]
