"""What the NUMA checks need from a pod: its QoS class and its requests as exact quantities.

NUMA accounting compares requests with per-zone quantities exactly (Go's Quantity.Cmp), and
scoring uses whole units rounded up (Quantity.Value, so 1500m of cpu counts as 2), so the
requests are kept as Decimals, per container and as the pod's effective request, the way
scheduler-plugins' util.GetPodEffectiveRequest and Kubernetes' QoS helper compute them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.kube.quantity import QuantityError, parse_quantity

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"
HUGEPAGES_PREFIX = "hugepages-"

Requests = dict[str, Decimal]


def is_native(resource: str) -> bool:
    """In the kubernetes.io namespace (unprefixed names are)."""
    return "/" not in resource or "kubernetes.io/" in resource


def is_hugepages(resource: str) -> bool:
    return resource.startswith(HUGEPAGES_PREFIX)


def is_host_level(resource: str) -> bool:
    """Resources that may not be bound to NUMA zones: storage, and anything not native (devices)."""
    return resource in ("ephemeral-storage", "storage") or not is_native(resource)


def is_numa_affine(resource: str) -> bool:
    """Resources that must be bound to one NUMA zone for Guaranteed pods: cpu, memory, hugepages."""
    return resource in ("cpu", "memory") or is_hugepages(resource)


def value(quantity: Decimal) -> int:
    """Go's Quantity.Value(): whole units, rounded up."""
    return math.ceil(quantity)


def is_exclusive(qos: str, resource: str, quantity: Decimal) -> bool:
    """Whether the kubelet would hand this request out exclusively (devices, pinned cpus, memory)."""
    if not is_native(resource):
        return True
    if qos != GUARANTEED:
        return False
    if resource == "cpu":
        return quantity > 0 and quantity == quantity.to_integral_value(rounding="ROUND_CEILING")
    if resource == "memory" or is_hugepages(resource):
        return value(quantity) > 0
    return False


def _quantities(raw: Mapping[str, Any] | None) -> Requests:
    found: Requests = {}
    for name, text in (raw or {}).items():
        try:
            found[str(name)] = parse_quantity(text)
        except QuantityError:
            continue  # the API server validates quantities; a snapshot may not have
    return found


@dataclass(frozen=True)
class Container:
    name: str
    init: bool
    requests: Requests
    sidecar: bool = False
    """An init container with restartPolicy Always (it keeps running)."""


@dataclass(frozen=True)
class PodResources:
    """A pod's containers' requests (init first, as the kubelet admits them), QoS and effective request."""

    qos: str
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    effective: Requests

    @property
    def all_containers(self) -> tuple[Container, ...]:
        return self.init_containers + self.containers

    def include_non_native(self) -> bool:
        return any(not is_native(name) for c in self.all_containers for name in c.requests)

    def has_exclusive(self) -> bool:
        return any(
            is_exclusive(self.qos, name, quantity)
            for container in self.all_containers
            for name, quantity in container.requests.items()
        )


def pod_resources(pod: KubeObject) -> PodResources:
    spec = pod.get("spec") or {}

    def containers(key: str, init: bool) -> tuple[Container, ...]:
        return tuple(
            Container(
                str(c.get("name", "")),
                init,
                _quantities((c.get("resources") or {}).get("requests")),
                sidecar=init and c.get("restartPolicy") == "Always",
            )
            for c in spec.get(key) or ()
        )

    init = containers("initContainers", True)
    regular = containers("containers", False)
    return PodResources(pod_qos(pod), init, regular, effective_request(init, regular, spec.get("overhead")))


def effective_request(
    init: tuple[Container, ...], regular: tuple[Container, ...], overhead: Mapping[str, Any] | None
) -> Requests:
    """The larger of the biggest init container and the sum of the containers, plus the overhead."""
    biggest_init: Requests = {}
    for container in init:
        for name, quantity in container.requests.items():
            if name not in biggest_init or quantity > biggest_init[name]:
                biggest_init[name] = quantity
    total: Requests = {}
    for container in regular:
        for name, quantity in container.requests.items():
            total[name] = total.get(name, Decimal(0)) + quantity
    for name, quantity in biggest_init.items():
        if name not in total or quantity > total[name]:
            total[name] = quantity
    for name, quantity in _quantities(overhead).items():
        total[name] = total.get(name, Decimal(0)) + quantity
    return total


def _positive_qos(raw: Mapping[str, Any] | None) -> Requests:
    return {name: q for name, q in _quantities(raw).items() if name in ("cpu", "memory") and q > 0}


def pod_qos(pod: KubeObject) -> str:
    """The pod's QoS class: status.qosClass if set, else computed as Kubernetes 1.34 does."""
    reported = (pod.get("status") or {}).get("qosClass")
    if reported:
        return str(reported)
    spec = pod.get("spec") or {}
    requests: Requests = {}
    limits: Requests = {}
    guaranteed = True
    pod_level = spec.get("resources")
    if pod_level:  # PodLevelResources (beta, on in 1.34)
        requests.update(_positive_qos(pod_level.get("requests")))
        if pod_level.get("limits"):
            limits.update(_positive_qos(pod_level.get("limits")))
            if set(limits) != {"cpu", "memory"}:
                guaranteed = False
    else:
        for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            resources = container.get("resources") or {}
            for name, quantity in _positive_qos(resources.get("requests")).items():
                requests[name] = requests.get(name, Decimal(0)) + quantity
            found = _positive_qos(resources.get("limits"))
            for name, quantity in found.items():
                limits[name] = limits.get(name, Decimal(0)) + quantity
            if set(found) != {"cpu", "memory"}:
                guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and any(limits.get(name) != quantity for name, quantity in requests.items()):
        guaranteed = False
    return GUARANTEED if guaranteed and len(requests) == len(limits) else BURSTABLE
