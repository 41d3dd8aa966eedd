"""Topology domains (label key, values) of pods, and their lookup over many nodes at once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from secondary_scheduler.framework.affinityterms import AffinityTerm
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo

Domains = dict[str, set[str]]
"""Topology key -> the values (domains) where some pod counts."""


def add_domains(domains: Domains, key: str, values: Iterable[str]) -> None:
    """Add ``values`` as domains of ``key``; a key keeps an entry only with at least one value."""
    known = domains.get(key)
    if known is None:
        fresh = set(values)
        if fresh:
            domains[key] = fresh
    else:
        known.update(values)


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
