"""A NodeResourceTopology object (topology.node.k8s.io/v1alpha2) as the plugin reads it.

The kubelet's Topology Manager configuration comes from the object's attributes
(``topologyManagerPolicy``, ``topologyManagerScope``, ``topologyManagerMaxNUMANodes``),
after the deprecated ``topologyPolicies`` field, as scheduler-plugins' nodeconfig reads
them; invalid values keep the kubelet's defaults (policy none, scope container, 8 NUMA
nodes). Zones of type ``Node`` named ``node-<id>`` are the NUMA nodes, with their
``available`` quantities and their distances (``costs``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.framework.informers import Resource
from secondary_scheduler.kube.quantity import QuantityError, parse_quantity
from secondary_scheduler.plugins.noderesourcetopology import fingerprint

NODE_RESOURCE_TOPOLOGIES = Resource(
    "topology.node.k8s.io/v1alpha2", "NodeResourceTopology", "noderesourcetopologies", namespaced=False
)

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"

ATTRIBUTE_SCOPE = "topologyManagerScope"
ATTRIBUTE_POLICY = "topologyManagerPolicy"
ATTRIBUTE_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"
DEFAULT_MAX_NUMA_NODES = 8
LIMIT_NUMA_NODES = 1024
MAX_NUMA_ID = 64
ZONE_TYPE_NUMA_NODE = "Node"
NUMA_PREFIX = "node-"

_LEGACY_POLICIES = {
    "SingleNUMANodePodLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_POD),
    "SingleNUMANodeContainerLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER),
    "BestEffortPodLevel": (POLICY_BEST_EFFORT, SCOPE_POD),
    "BestEffortContainerLevel": (POLICY_BEST_EFFORT, SCOPE_CONTAINER),
    "RestrictedPodLevel": (POLICY_RESTRICTED, SCOPE_POD),
    "RestrictedContainerLevel": (POLICY_RESTRICTED, SCOPE_CONTAINER),
}
_POLICIES = frozenset({POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE})


@dataclass(frozen=True)
class TopologyManager:
    policy: str = POLICY_NONE
    scope: str = SCOPE_CONTAINER
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES

    def __str__(self) -> str:
        return f"policy={self.policy} scope={self.scope} maxNUMANodes={self.max_numa_nodes}"


def attributes(items: Iterable[Any] | None) -> list[tuple[str, str]]:
    return [
        (str(item.get("name", "")), str(item.get("value", "")))
        for item in items or ()
        if isinstance(item, Mapping)
    ]


def topology_manager(nrt: KubeObject) -> TopologyManager:
    policy, scope, max_nodes = POLICY_NONE, SCOPE_CONTAINER, DEFAULT_MAX_NUMA_NODES
    legacy = nrt.get("topologyPolicies") or []
    if legacy:
        policy, scope = _LEGACY_POLICIES.get(str(legacy[0]), (policy, scope))
    for name, value in attributes(nrt.get("attributes")):
        if name == ATTRIBUTE_SCOPE and value in (SCOPE_CONTAINER, SCOPE_POD):
            scope = value
        elif name == ATTRIBUTE_POLICY and value in _POLICIES:
            policy = value
        elif name == ATTRIBUTE_MAX_NUMA_NODES:
            try:
                number = int(value, 10)
            except ValueError:
                continue
            if number > 1:
                max_nodes = min(number, LIMIT_NUMA_NODES)
    return TopologyManager(policy, scope, max_nodes)


def numa_id(name: str) -> int | None:
    """The id of a zone named ``node-<id>`` (Go's strconv.Atoi accepts a sign), else None."""
    if not name.startswith(NUMA_PREFIX):
        return None
    digits = name[len(NUMA_PREFIX) :]
    body = digits[1:] if digits[:1] in ("+", "-") else digits
    if not body.isascii() or not body.isdigit():
        return None
    number = int(digits)
    return number if number >= 0 else None


@dataclass
class NUMANode:
    """One NUMA zone: what is available there, and its distance to each zone (by id)."""

    id: int
    resources: dict[str, Decimal]
    costs: dict[int, int] = field(default_factory=dict)

    def copy(self) -> NUMANode:
        return NUMANode(self.id, dict(self.resources), dict(self.costs))


def _quantity(raw: object) -> Decimal:
    try:
        return parse_quantity(raw)  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return Decimal(0)


def numa_nodes(nrt: KubeObject) -> list[NUMANode]:
    """The NUMA zones in the object's order; other zone types and bad names are skipped."""
    nodes: list[NUMANode] = []
    for zone in nrt.get("zones") or ():
        if not isinstance(zone, Mapping) or zone.get("type") != ZONE_TYPE_NUMA_NODE:
            continue
        number = numa_id(str(zone.get("name", "")))
        if number is None or number > MAX_NUMA_ID:
            continue
        resources = {
            str(item.get("name", "")): _quantity(item.get("available"))
            for item in zone.get("resources") or ()
            if isinstance(item, Mapping)
        }
        costs: dict[int, int] = {}
        for cost in zone.get("costs") or ():
            other = numa_id(str(cost.get("name", ""))) if isinstance(cost, Mapping) else None
            if other is not None and other <= MAX_NUMA_ID:
                try:
                    costs[other] = int(cost.get("value", 0))
                except (TypeError, ValueError):
                    continue
        nodes.append(NUMANode(number, resources, costs))
    return nodes


def deep_copy(nrt: KubeObject) -> KubeObject:
    return copy.deepcopy(nrt)


def pods_fingerprint(nrt: KubeObject, method: str) -> tuple[str, bool]:
    """The published pod-set fingerprint and whether only pods with exclusive resources count.

    ``method`` is the cache's resyncMethod; Autodetect reads the exporter's hint attribute.
    """
    attrs = attributes(nrt.get("attributes"))
    found = [value for name, value in attrs if name == fingerprint.ATTRIBUTE]
    if found:
        only_exclusive = method == "OnlyExclusiveResources"
        if method == "Autodetect":
            hint = [value for name, value in attrs if name == fingerprint.ATTRIBUTE_METHOD]
            only_exclusive = bool(hint) and hint[0] == fingerprint.METHOD_WITH_EXCLUSIVE_RESOURCES
        return found[0], only_exclusive
    annotations = (nrt.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(fingerprint.ANNOTATION, "")), False
