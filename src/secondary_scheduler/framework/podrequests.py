"""A pod's resource requests, aggregated the way Kubernetes' resource helper does.

Regular containers add up. Init containers run one at a time before them, so they count as
a maximum; restartable init containers (sidecars, ``restartPolicy: Always``) keep running,
so they add to the regular containers and to every init container started after them.
Pod-level ``spec.resources.requests`` (cpu, memory and hugepages-*) replace the container sum, and
``spec.overhead`` is added on top. Quantities are summed exactly and converted to
scheduler units (millicores, bytes) only at the end, like Go's resource.Quantity.

With the pod's ``status`` (a running pod), a container that reports resources counts the
largest of what its spec asks, what it runs with and what the kubelet allocated, so a pod
resized in place holds the room of both sizes until the resize is done (upstream's
UseStatusResources, on with InPlacePodVerticalScaling); a resize the kubelet found
infeasible counts only what it runs with and what was allocated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from secondary_scheduler.framework.resources import CPU, MEMORY
from secondary_scheduler.kube.quantity import parse_quantity

ResourceList = dict[str, Decimal]

DEFAULT_MILLI_CPU_REQUEST = 100
"""cpu (millicores) that scoring assumes for a container that requests none."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""memory (bytes) that scoring assumes for a container that requests none."""

_DEFAULTS: ResourceList = {
    CPU: Decimal(DEFAULT_MILLI_CPU_REQUEST) / 1000,
    MEMORY: Decimal(DEFAULT_MEMORY_REQUEST),
}
_POD_LEVEL_RESOURCES = frozenset({CPU, MEMORY})
HUGEPAGES_PREFIX = "hugepages-"


def is_pod_level_resource(name: str) -> bool:
    """Whether ``spec.resources`` may set this resource (PodLevelResources: cpu, memory, hugepages)."""
    return name in _POD_LEVEL_RESOURCES or name.startswith(HUGEPAGES_PREFIX)


def _resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    return {name: parse_quantity(value) for name, value in (raw or {}).items()}


def _container_requests(container: Mapping[str, Any], status: _Statuses) -> ResourceList:
    requests = _resource_list((container.get("resources") or {}).get("requests"))
    container_status = status.by_name.get(str(container.get("name", "")))
    if container_status is None or not container_status.get("resources"):
        return requests
    running = _resource_list((container_status.get("resources") or {}).get("requests"))
    allocated = _resource_list(container_status.get("allocatedResources"))
    combined = {} if status.resize_infeasible else dict(requests)
    _raise_to(combined, running)
    _raise_to(combined, allocated)
    return combined


class _Statuses:
    """The pod's container statuses by name, and whether its resize was found infeasible."""

    def __init__(self, status: Mapping[str, Any] | None) -> None:
        status = status or {}
        self.by_name: dict[str, Mapping[str, Any]] = {
            str(item.get("name", "")): item
            for field in ("containerStatuses", "initContainerStatuses")
            for item in status.get(field) or ()
        }
        self.resize_infeasible = any(
            condition.get("type") == "PodResizePending" and condition.get("reason") == "Infeasible"
            for condition in status.get("conditions") or ()
        )


_NO_STATUS = _Statuses(None)


def _add(total: ResourceList, more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Decimal(0)) + value


def _raise_to(total: ResourceList, more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = max(total.get(name, value), value)


def _with_defaults(requests: ResourceList, defaults: Mapping[str, Decimal]) -> ResourceList:
    """The container's requests with ``defaults`` for the resources it leaves unset (0 stays 0)."""
    return {**defaults, **requests}


def _containers(spec: Mapping[str, Any], field: str) -> Iterable[Mapping[str, Any]]:
    return spec.get(field) or ()


def _aggregate_containers(
    spec: Mapping[str, Any], defaults: Mapping[str, Decimal], status: _Statuses
) -> ResourceList:
    total: ResourceList = {}
    for container in _containers(spec, "containers"):
        _add(total, _with_defaults(_container_requests(container, status), defaults))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in _containers(spec, "initContainers"):
        sidecar = container.get("restartPolicy") == "Always"
        requests = _with_defaults(_container_requests(container, status if sidecar else _NO_STATUS), defaults)
        if sidecar:
            _add(total, requests)
            _add(sidecars, requests)
            running = dict(sidecars)
        else:
            running = dict(requests)
            _add(running, sidecars)
        _raise_to(init_peak, running)
    _raise_to(total, init_peak)
    return total


def _pod_level_requests(spec: Mapping[str, Any]) -> ResourceList:
    requests = _resource_list((spec.get("resources") or {}).get("requests"))
    return {name: value for name, value in requests.items() if is_pod_level_resource(name)}


def _pod_level_set(spec: Mapping[str, Any]) -> bool:
    """Whether pod-level resources are in use: a supported resource in requests, or in limits
    (which the API server turns into requests); unsupported names alone do not count."""
    resources = spec.get("resources") or {}
    named = [*(resources.get("requests") or {}), *(resources.get("limits") or {})]
    return any(is_pod_level_resource(name) for name in named)


def _requests(
    spec: Mapping[str, Any], defaults: Mapping[str, Decimal], status: _Statuses, pod_level: bool = True
) -> ResourceList:
    requests = _aggregate_containers(spec, defaults, status)
    if pod_level:
        requests.update(_pod_level_requests(spec))
    _add(requests, _resource_list(spec.get("overhead")))
    return requests


def _to_units(name: str, value: Decimal) -> int:
    """Scheduler units, rounded up: millicores for cpu, whole units otherwise."""
    return math.ceil(value * 1000) if name == CPU else math.ceil(value)


def _in_units(requests: Mapping[str, Decimal]) -> dict[str, int]:
    return {name: _to_units(name, value) for name, value in requests.items()}


def pod_requests(
    spec: Mapping[str, Any], status: Mapping[str, Any] | None = None, *, pod_level: bool = True
) -> dict[str, int]:
    """What the pod requests, per resource, as NodeResourcesFit and the node's "requested" see it.

    ``pod_level=False`` leaves pod-level ``spec.resources`` out (the container sum and the
    overhead only): NodeResourcesFit's score sees a pod that way upstream.
    """
    return _in_units(_requests(spec, {}, _Statuses(status), pod_level))


def non_zero_requests(
    spec: Mapping[str, Any], status: Mapping[str, Any] | None = None, *, pod_level: bool = True
) -> tuple[int, int]:
    """(millicores, bytes) for scoring: containers without a cpu/memory request count 100m / 200Mi.

    This keeps pods that request nothing from all landing on the same "empty-looking" node.
    With pod-level requests, the default applies only to a resource set nowhere; with
    ``pod_level=False`` they are ignored, as in ``pod_requests``.
    """
    statuses = _Statuses(status)
    return _non_zero(spec, _requests(spec, {}, statuses, pod_level), statuses, pod_level)


def requests_and_non_zero(
    spec: Mapping[str, Any], status: Mapping[str, Any] | None = None, *, pod_level: bool = True
) -> tuple[dict[str, int], tuple[int, int]]:
    """``pod_requests`` and ``non_zero_requests`` of one pod, together.

    A pod's info is built again on every event about it; when every container asks for cpu
    and memory the defaults change nothing, and the containers are summed once, not three times.
    """
    statuses = _Statuses(status)
    requests = _requests(spec, {}, statuses, pod_level)
    return _in_units(requests), _non_zero(spec, requests, statuses, pod_level)


def _non_zero(
    spec: Mapping[str, Any], requests: ResourceList, statuses: _Statuses, pod_level: bool
) -> tuple[int, int]:
    """``non_zero_requests`` from the pod's sum without defaults (``requests``)."""
    defaults = _DEFAULTS
    if pod_level and _pod_level_set(spec):
        defaults = {name: value for name, value in _DEFAULTS.items() if name not in requests}
    if defaults and _defaults_fill_in(spec, defaults, statuses):
        requests = _requests(spec, defaults, statuses, pod_level)
    return (
        _to_units(CPU, requests.get(CPU, Decimal(0))),
        _to_units(MEMORY, requests.get(MEMORY, Decimal(0))),
    )


def _defaults_fill_in(spec: Mapping[str, Any], defaults: Mapping[str, Decimal], statuses: _Statuses) -> bool:
    """Whether some container leaves one of ``defaults`` unset, so that they change the sum.

    A container's spec requests are all in what it counts, unless a resize was found
    infeasible (then only what it runs with counts): there the answer is yes, to be safe.
    """
    if statuses.resize_infeasible:
        return True
    for field in ("initContainers", "containers"):
        for container in _containers(spec, field):
            asked = (container.get("resources") or {}).get("requests") or {}
            if any(name not in asked for name in defaults):
                return True
    return False
