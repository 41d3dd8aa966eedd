"""Topology-pair counts of the placed pods, kept up to date as pods are placed and removed.

kube-scheduler's PreFilter and PreScore walk every pod in the cluster on every cycle (in
parallel, in Go). Walking them in Python would cost milliseconds per cycle at a few
thousand pods, so the table keeps this index instead, updated on every placement, removal
and node relabelling (``NodeTable.index``), and a cycle reads sums from it:

- **existing pods' terms**, grouped by identical term: for each required anti-affinity term,
  required affinity term and weighted preferred term held by placed pods, how many of those
  pods sit in each domain (value of the term's topology key on their node). A cycle checks each
  distinct term once against the incoming pod instead of once per pod;
- **incoming pods' terms**: for a set of terms an incoming pod carries (its required affinity
  terms together, each anti-affinity or preferred term alone), how many placed pods they all
  select in each domain. Built on first use from the pods in the terms' namespaces, then kept
  up to date; the least recently used sets are dropped past ``MAX_SELECTIONS``. Terms with a
  ``namespaceSelector`` are not cached here (they depend on namespace labels, which change
  without any pod moving): the plugin counts those by walking the pods, as before.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

from secondary_scheduler.framework.affinityterms import AffinityTerm
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo

INDEX_NAME = "InterPodAffinity"
MAX_SELECTIONS = 64

DomainCounts = dict[str, int]
"""Topology value -> how many pods (only values with at least one)."""

WeightedTerm = tuple[AffinityTerm, int | None]
"""An existing pod's scoring term and its weight (negative: anti-affinity; None: a required
affinity term, weighted by the plugin's hardPodAffinityWeight)."""


def _add(counts: DomainCounts, value: str | None, amount: int) -> None:
    if value is None:
        return
    total = counts.get(value, 0) + amount
    if total:
        counts[value] = total
    else:
        del counts[value]


class Selection:
    """The placed pods that every one of ``terms`` selects, counted per domain of each term's key."""

    def __init__(self, terms: tuple[AffinityTerm, ...]) -> None:
        self.terms = terms
        self.namespaces = frozenset().union(*(term.namespaces for term in terms))
        self.counts: dict[str, DomainCounts] = {term.topology_key: {} for term in terms}

    def selects(self, pod: PodInfo) -> bool:
        return all(
            pod.namespace in term.namespaces and term.selector.matches(pod.labels) for term in self.terms
        )

    def update(self, labels: Mapping[str, str], amount: int) -> None:
        for term in self.terms:
            _add(self.counts[term.topology_key], labels.get(term.topology_key), amount)


def cacheable(terms: Iterable[AffinityTerm]) -> bool:
    """Terms whose selection depends on pod labels and namespace names only (no namespaceSelector)."""
    return all(term.namespace_selector.selects_nothing for term in terms)


class AffinityIndex:
    def __init__(self, table: NodeTable) -> None:
        self._table = table
        self.required_anti_affinity: dict[AffinityTerm, DomainCounts] = {}
        """Existing pods' required anti-affinity terms -> their pods per domain."""
        self.scoring_terms: dict[WeightedTerm, DomainCounts] = {}
        """Existing pods' preferred terms (and required affinity terms) -> their pods per domain."""
        self._selections: OrderedDict[tuple[AffinityTerm, ...], Selection] = OrderedDict()
        self._by_namespace: dict[str, set[tuple[AffinityTerm, ...]]] = {}
        for pod, slot in table.all_pods():
            self.pod_placed(slot, pod, table.labels[slot])

    # -- kept up to date by the table ---------------------------------------------------
    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._update(pod, labels, 1)

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._update(pod, labels, -1)

    def _update(self, pod: PodInfo, labels: Mapping[str, str], amount: int) -> None:
        if pod.has_pod_affinity:
            for term in pod.required_anti_affinity_terms:
                _add(self.required_anti_affinity.setdefault(term, {}), labels.get(term.topology_key), amount)
            for key in self._scoring_keys(pod):
                _add(self.scoring_terms.setdefault(key, {}), labels.get(key[0].topology_key), amount)
        for selection_key in self._by_namespace.get(pod.namespace, ()):
            selection = self._selections[selection_key]
            if selection.selects(pod):
                selection.update(labels, amount)

    @staticmethod
    def _scoring_keys(pod: PodInfo) -> Iterable[WeightedTerm]:
        for item in pod.preferred_affinity_terms:
            yield item.term, item.weight
        for item in pod.preferred_anti_affinity_terms:
            yield item.term, -item.weight
        for term in pod.required_affinity_terms:
            yield term, None

    # -- read by a cycle ----------------------------------------------------------------
    def selection(self, terms: tuple[AffinityTerm, ...]) -> Selection:
        """The placed pods all ``terms`` select, by domain (``terms`` must be ``cacheable``)."""
        selection = self._selections.get(terms)
        if selection is not None:
            self._selections.move_to_end(terms)
            return selection
        selection = Selection(terms)
        table = self._table
        for namespace in selection.namespaces:
            for pod, slot in table.pods_in_namespace(namespace):
                if selection.selects(pod):
                    selection.update(table.labels[slot], 1)
        self._selections[terms] = selection
        for namespace in selection.namespaces:
            self._by_namespace.setdefault(namespace, set()).add(terms)
        if len(self._selections) > MAX_SELECTIONS:
            self._forget(next(iter(self._selections)))
        return selection

    def _forget(self, terms: tuple[AffinityTerm, ...]) -> None:
        selection = self._selections.pop(terms)
        for namespace in selection.namespaces:
            keys = self._by_namespace[namespace]
            keys.discard(terms)
            if not keys:
                del self._by_namespace[namespace]


def affinity_index(table: NodeTable) -> AffinityIndex:
    return table.index(INDEX_NAME, AffinityIndex)
