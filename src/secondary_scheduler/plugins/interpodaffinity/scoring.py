"""Preferred inter-pod (anti-)affinity, both ways.

Every existing pod contributes to its node's domains: the incoming pod's preferred terms
that select it add (affinity) or subtract (anti-affinity) their weight; its own preferred
terms that select the incoming pod do the same; and its required affinity terms that select
the incoming pod add ``hardPodAffinityWeight``. A node scores the sum over its domains;
scores are rescaled so the lowest is 0 and the highest 100.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.affinityterms import AffinityTerm, NamespaceLabels
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.plugins.interpodaffinity.topology import domain_values, pods_in_reach

TopologyScores = dict[str, dict[str, int]]
"""topology key -> domain value -> score."""


@dataclass(frozen=True)
class ScoreState:
    topology_scores: TopologyScores


def _add(
    scores: TopologyScores,
    terms: Iterable[tuple[AffinityTerm, int]],
    target: PodInfo,
    node_labels: Mapping[str, str],
    namespace_labels: NamespaceLabels,
) -> None:
    for term, amount in terms:
        if term.matches(target.namespace, target.labels, namespace_labels):
            value = node_labels.get(term.topology_key)
            if value is not None:
                domain = scores.setdefault(term.topology_key, {})
                domain[value] = domain.get(value, 0) + amount


def score_state(
    table: NodeTable,
    pod: PodInfo,
    namespace_labels: NamespaceLabels,
    hard_pod_affinity_weight: int,
    ignore_preferred_terms_of_existing_pods: bool,
) -> ScoreState | None:
    """The score of each domain, or None when nothing applies (Score is then skipped)."""
    own_preferences = bool(pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms)
    if ignore_preferred_terms_of_existing_pods and not own_preferences:
        return None
    scores: TopologyScores = {}
    incoming = [(item.term, item.weight) for item in pod.preferred_affinity_terms]
    incoming += [(item.term, -item.weight) for item in pod.preferred_anti_affinity_terms]
    for other, slot in pods_in_reach(table, (term for term, _weight in incoming)):
        _add(scores, incoming, other, table.labels[slot], namespace_labels)
    for other, slot in table.pods_with_affinity():
        node_labels = table.labels[slot]
        theirs = [(item.term, item.weight) for item in other.preferred_affinity_terms]
        theirs += [(item.term, -item.weight) for item in other.preferred_anti_affinity_terms]
        if hard_pod_affinity_weight > 0:
            theirs += [(term, hard_pod_affinity_weight) for term in other.required_affinity_terms]
        _add(scores, theirs, pod, node_labels, namespace_labels)
    return ScoreState(scores) if scores else None


def scores(state: ScoreState, table: NodeTable, nodes: Slots) -> IntArray:
    total = np.zeros(len(nodes), dtype=np.int64)
    for key, values in state.topology_scores.items():
        total += domain_values(table, nodes, key, values)
    return total


def normalize(raw: IntArray) -> IntArray:
    lowest, highest = int(raw.min()), int(raw.max())
    if highest == lowest:
        return np.zeros_like(raw)
    return np.trunc(MAX_NODE_SCORE * ((raw - lowest) / (highest - lowest))).astype(np.int64)
