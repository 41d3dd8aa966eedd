"""Filter: would the kubelet's single-numa-node Topology Manager admit the pod on this node?

A simplified admit handler, as scheduler-plugins' filter.go: for each container in the
order the kubelet admits them (init containers one at a time, then the app containers,
each taking its share from the zone it lands on) or for the whole pod (scope pod), the
zones where every requested resource fits are intersected; the kubelet picks the lowest
such zone. Non-Guaranteed pods get cpu, memory and hugepages from shared pools, so only
their devices must fit one zone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from secondary_scheduler.plugins.noderesourcetopology.podresources import (
    GUARANTEED,
    PodResources,
    is_host_level,
    is_numa_affine,
)
from secondary_scheduler.plugins.noderesourcetopology.topology import (
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_CONTAINER,
    SCOPE_POD,
    NUMANode,
    TopologyManager,
)

ALL_BITS = frozenset(range(64))
"""The Topology Manager's bitmask starts with every bit set (64-bit mask)."""


def suitable(qos: str, resource: str, quantity: Decimal, available: Decimal) -> bool:
    """Shared pools serve non-Guaranteed pods' cpu/memory/hugepages: any zone will do for those."""
    if qos != GUARANTEED and is_numa_affine(resource):
        return True
    return available >= quantity


@dataclass(frozen=True)
class Fit:
    numa_id: int
    fits: bool
    resource: str
    """The resource that left no zone (when it does not fit)."""


def fit_in_any_zone(
    tm: TopologyManager,
    zones: list[NUMANode],
    qos: str,
    requests: Mapping[str, Decimal],
    node_has: Callable[[str], bool],
) -> Fit:
    """The zone the kubelet would pick for these requests (the lowest that fits), or why none."""
    bits = set(ALL_BITS)
    for resource in sorted(requests):
        quantity = requests[resource]
        if quantity == 0:
            continue
        if not node_has(resource):
            return Fit(-1, False, resource)
        has_affinity = False
        fitting: set[int] = set()
        for zone in zones:
            if resource not in zone.resources:
                continue
            has_affinity = True
            if suitable(qos, resource, quantity, zone.resources[resource]):
                fitting.add(zone.id)
        if not has_affinity and is_host_level(resource):
            continue
        bits &= fitting
        if not bits:
            return Fit(tm.max_numa_nodes, False, resource)
    return Fit(min(bits), True, "generic")


class AccountingError(Exception):
    """A container would take more than its zone has: a bug in the accounting, never a verdict."""


def subtract(zones: list[NUMANode], numa_id: int, qos: str, requests: Mapping[str, Decimal]) -> None:
    """Take a container's requests from zone ``numa_id`` so the next containers see what is left."""
    for zone in zones:
        if zone.id != numa_id:
            continue
        for resource, quantity in requests.items():
            if qos != GUARANTEED and is_numa_affine(resource):
                continue
            if quantity == 0 or resource not in zone.resources:
                continue
            left = zone.resources[resource] - quantity
            if left < 0:
                raise AccountingError(
                    f"resource {resource!r} request {quantity} exceeds NUMA {numa_id} "
                    f"availability {zone.resources[resource]}"
                )
            zone.resources[resource] = left


@dataclass
class Verdict:
    """The Filter's answer for one node, with what ``secsched score`` explains."""

    fits: bool
    message: str = ""
    """The status message when it does not fit (upstream's wording)."""
    error: bool = False
    """Inconsistent accounting: an Error status rather than Unschedulable."""
    placements: list[tuple[str, int]] = field(default_factory=list)
    """(container or "pod", NUMA zone) the kubelet would choose, in admission order."""
    blocked: str = ""
    """The container that found no zone and the resource that left none, for the note."""


def single_numa_node(
    tm: TopologyManager,
    zones: list[NUMANode],
    pod: PodResources,
    node_has: Callable[[str], bool],
) -> Verdict | None:
    """The verdict under the node's policy, or None when the policy imposes nothing to check."""
    if tm.policy != POLICY_SINGLE_NUMA_NODE:
        return None
    if tm.scope == SCOPE_POD:
        fit = fit_in_any_zone(tm, zones, pod.qos, pod.effective, node_has)
        if not fit.fits:
            return Verdict(False, "cannot align pod", blocked=f"pod: {fit.resource}")
        return Verdict(True, placements=[("pod", fit.numa_id)])
    if tm.scope != SCOPE_CONTAINER:
        return None
    verdict = Verdict(True)
    for container in pod.init_containers:
        fit = fit_in_any_zone(tm, zones, pod.qos, container.requests, node_has)
        if not fit.fits:
            kind = "sidecar" if container.sidecar else "init"
            return Verdict(
                False, f"cannot align {kind} container", blocked=f"{container.name}: {fit.resource}"
            )
        verdict.placements.append((container.name, fit.numa_id))
    for container in pod.containers:
        fit = fit_in_any_zone(tm, zones, pod.qos, container.requests, node_has)
        if not fit.fits:
            return Verdict(False, "cannot align container", blocked=f"{container.name}: {fit.resource}")
        try:
            subtract(zones, fit.numa_id, pod.qos, container.requests)
        except AccountingError as error:
            return Verdict(False, f"inconsistent resource accounting: {error}", error=True)
        verdict.placements.append((container.name, fit.numa_id))
    return verdict
