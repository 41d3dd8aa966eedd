"""Preferred inter-pod (anti-)affinity, both ways.

Every existing pod contributes to its node's domains: the incoming pod's preferred terms
that select it add (affinity) or subtract (anti-affinity) their weight; its own preferred
terms that select the incoming pod do the same; and its required affinity terms that select
the incoming pod add ``hardPodAffinityWeight``. A node scores the sum over its domains;
scores are rescaled so the lowest is 0 and the highest 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.affinityterms import NamespaceLabels
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.plugins.interpodaffinity.index import affinity_index, cacheable
from secondary_scheduler.plugins.interpodaffinity.topology import domain_values, pods_in_reach

TopologyScores = dict[str, dict[str, int]]
"""topology key -> domain value -> score."""


@dataclass(frozen=True)
class ScoreState:
    topology_scores: TopologyScores


def _add(scores: TopologyScores, key: str, counts: Mapping[str, int], weight: int) -> None:
    domain = scores.setdefault(key, {})
    for value, count in counts.items():
        domain[value] = domain.get(value, 0) + weight * count


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
    index = affinity_index(table)
    walked = []
    for term, weight in incoming:
        if cacheable((term,)):
            counts = index.selection((term,)).counts[term.topology_key]
            if counts:
                _add(scores, term.topology_key, counts, weight)
        else:
            walked.append((term, weight))
    if walked:
        for other, slot in pods_in_reach(table, (term for term, _weight in walked)):
            node_labels = table.labels[slot]
            for term, weight in walked:
                value = node_labels.get(term.topology_key)
                if value is not None and term.matches(other.namespace, other.labels, namespace_labels):
                    _add(scores, term.topology_key, {value: 1}, weight)
    for (term, existing_weight), counts in index.scoring_terms.items():
        amount = hard_pod_affinity_weight if existing_weight is None else existing_weight
        if counts and amount and term.matches(pod.namespace, pod.labels, namespace_labels):
            _add(scores, term.topology_key, counts, amount)
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
