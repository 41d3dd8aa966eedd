"""Counts per topology pair (label key, value), and their lookup over many nodes at once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from secondary_scheduler.framework.affinityterms import AffinityTerm
from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo

TopologyPair = tuple[str, str]


def add_pair(
    counts: Counter[TopologyPair], node_labels: Mapping[str, str], key: str, amount: int = 1
) -> None:
    """Count ``amount`` in the node's domain for ``key``; nodes without that label count nowhere."""
    value = node_labels.get(key)
    if value is not None:
        counts[(key, value)] += amount


def in_positive_domain(
    table: NodeTable, nodes: Slots, key: str, counts: Mapping[TopologyPair, int]
) -> BoolArray:
    """Whether each node's domain for ``key`` has a positive count."""
    values = [value for (pair_key, value), count in counts.items() if pair_key == key and count > 0]
    return table.label_column(key).isin(nodes, values)


def domain_values(table: NodeTable, nodes: Slots, key: str, values: Mapping[str, int]) -> IntArray:
    """Each node's value of its domain for ``key`` (0 without the label or an entry)."""
    column = table.label_column(key)
    by_code = np.zeros(len(column.values) + 1, dtype=np.int64)  # the last entry serves missing labels
    for value, amount in values.items():
        code = column.code_of(value)
        if code is not None:
            by_code[code] = amount
    return by_code[column.codes[nodes]]


def pods_in_reach(table: NodeTable, terms: Iterable[AffinityTerm]) -> Iterator[tuple[PodInfo, int]]:
    """(pod, slot) of the pods the terms could select: in their namespaces (all, with a namespaceSelector)."""
    namespaces: set[str] = set()
    for term in terms:
        if not term.namespace_selector.selects_nothing:
            return table.all_pods()
        namespaces |= term.namespaces
    return (item for namespace in sorted(namespaces) for item in table.pods_in_namespace(namespace))
