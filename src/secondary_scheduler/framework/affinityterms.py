"""Inter-pod affinity terms: which pods a term selects, and where (its topology key).

A term selects pods in its ``namespaces``, or in namespaces whose labels match its
``namespaceSelector``; with neither, the namespace of the pod that owns the term. The
namespace labels come from a lookup the runtime provides (see ``Handle``); without one,
a namespace is known only by its ``kubernetes.io/metadata.name`` label, which the API
server sets on every namespace. ``matchLabelKeys``/``mismatchLabelKeys`` are not read
here: since Kubernetes 1.33 the API server merges them into ``labelSelector``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.labels import LabelSelector

NamespaceLabels = Callable[[str], Mapping[str, str]]
"""Namespace name -> its labels."""

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def namespace_name_only(namespace: str) -> Mapping[str, str]:
    """The labels every namespace is known to have, for when no namespace lister is wired in."""
    return {NAMESPACE_NAME_LABEL: namespace}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    selector: LabelSelector
    topology_key: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any], owner_namespace: str) -> AffinityTerm:
        namespaces = frozenset(str(name) for name in raw.get("namespaces") or ())
        raw_namespace_selector = raw.get("namespaceSelector")
        if not namespaces and raw_namespace_selector is None:
            namespaces = frozenset([owner_namespace])
        return cls(
            namespaces=namespaces,
            namespace_selector=LabelSelector.parse(raw_namespace_selector),
            selector=LabelSelector.parse(raw.get("labelSelector")),
            topology_key=str(raw.get("topologyKey", "")),
        )

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: NamespaceLabels) -> bool:
        """Whether a pod in ``namespace`` with ``labels`` is selected by this term."""
        in_namespace = namespace in self.namespaces or (
            not self.namespace_selector.selects_nothing
            and self.namespace_selector.matches(namespace_labels(namespace))
        )
        return in_namespace and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


def parse_terms(raw: Sequence[Mapping[str, Any]] | None, owner_namespace: str) -> tuple[AffinityTerm, ...]:
    return tuple(AffinityTerm.parse(item, owner_namespace) for item in raw or ())


def parse_weighted_terms(
    raw: Sequence[Mapping[str, Any]] | None, owner_namespace: str
) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(
        WeightedAffinityTerm(
            int(item.get("weight") or 0),
            AffinityTerm.parse(item.get("podAffinityTerm") or {}, owner_namespace),
        )
        for item in raw or ()
    )
