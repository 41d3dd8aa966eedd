"""Resource pools: the ResourceSlices a node can use, grouped as upstream's allocator groups them.

``k8s.io/dynamic-resource-allocation/structured`` (GatherPools): a slice belongs to a node
through ``nodeName``, ``allNodes`` or ``nodeSelector``; slices of one (driver, pool) form a
pool; only the slices of the pool's newest ``generation`` count; a pool with fewer slices
than its ``resourceSliceCount`` is *incomplete* (still usable, but not for
``allocationMode: All``); a pool with a device name twice is *invalid* (allocation from the
node fails with an error). Upstream visits pools in Go map order (random); here they come in
the order of their first slice as handed in (the allocator passes the slices for all nodes or
a selector, then the node's own), which is one of upstream's possible orders.

Fields of feature gates that kube-scheduler 1.34 leaves off (partitionable devices, device
taints, consumable capacity, binding conditions) are refused with the slice and field named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.framework.nodeselector import NodeSelector


class AllocationError(Exception):
    """Upstream's allocator error: the claims cannot be judged on this node (an Error, not a rejection)."""


class UnsupportedFeature(AllocationError):
    """An object uses a DRA feature that kube-scheduler 1.34 leaves off by default."""


_GATED_SLICE_FIELDS = {
    "perDeviceNodeSelection": "DRAPartitionableDevices",
    "sharedCounters": "DRAPartitionableDevices",
}
_GATED_DEVICE_FIELDS = {
    "consumesCounters": "DRAPartitionableDevices",
    "nodeName": "DRAPartitionableDevices",
    "nodeSelector": "DRAPartitionableDevices",
    "allNodes": "DRAPartitionableDevices",
    "taints": "DRADeviceTaints",
    "bindingConditions": "DRADeviceBindingConditions",
    "bindingFailureConditions": "DRADeviceBindingConditions",
    "bindsToNode": "DRADeviceBindingConditions",
    "allowMultipleAllocations": "DRAConsumableCapacity",
}

_GATED_DEVICE_KEYS = frozenset(_GATED_DEVICE_FIELDS)


def _refusal(what: str, path: str, gate: str) -> UnsupportedFeature:
    return UnsupportedFeature(
        f"{what} sets {path}, which needs the {gate} feature gate that kube-scheduler 1.34 leaves off; "
        "this scheduler does not implement it: schedule such pods with a scheduler that enables it"
    )


def check_slice(slice_obj: KubeObject) -> None:
    """Refuse a slice that uses a gated field (upstream with the gates off would skip or ignore it)."""
    spec = slice_obj.get("spec") or {}
    name = (slice_obj.get("metadata") or {}).get("name", "")
    for key, gate in _GATED_SLICE_FIELDS.items():
        if spec.get(key) not in (None, [], False):
            raise _refusal(f"ResourceSlice {name}", f"spec.{key}", gate)
    for index, device in enumerate(spec.get("devices") or ()):
        if _GATED_DEVICE_KEYS.isdisjoint(device):
            continue  # the common case, and the check runs for every slice a node reads, each cycle
        for key, gate in _GATED_DEVICE_FIELDS.items():
            if device.get(key) not in (None, [], False):
                raise _refusal(f"ResourceSlice {name}", f"spec.devices[{index}].{key}", gate)


@dataclass
class Pool:
    driver: str
    name: str
    generation: int
    slices: list[KubeObject] = field(default_factory=list)
    incomplete: bool = False
    invalid_reason: str | None = None

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def _slice_matches_node(spec: Mapping[str, Any], node: KubeObject) -> bool | None:
    """Whether the slice serves the node; None when it says nothing upstream knows (skipped)."""
    node_name = spec.get("nodeName") or ""
    if node_name:
        return str((node.get("metadata") or {}).get("name", "")) == node_name
    if spec.get("allNodes"):
        return True
    selector = spec.get("nodeSelector")
    if selector is not None:
        return NodeSelector.parse(selector).matches(node)
    return None


def gather_pools(slices: Iterable[KubeObject], node: KubeObject) -> list[Pool]:
    """The pools of devices the node can reach, with their completeness and validity."""
    pools: dict[tuple[str, str], Pool] = {}
    for slice_obj in slices:
        spec = slice_obj.get("spec") or {}
        if spec.get("perDeviceNodeSelection"):
            check_slice(slice_obj)  # refused: which node it serves is decided per device
        if not _slice_matches_node(spec, node):
            continue
        check_slice(slice_obj)
        pool_spec = spec.get("pool") or {}
        key = (str(spec.get("driver", "")), str(pool_spec.get("name", "")))
        generation = int(pool_spec.get("generation", 0))
        pool = pools.get(key)
        if pool is None:
            pools[key] = Pool(key[0], key[1], generation, [slice_obj])
        elif generation > pool.generation:
            pool.generation, pool.slices = generation, [slice_obj]
        elif generation == pool.generation:
            pool.slices.append(slice_obj)
    for pool in pools.values():
        wanted = int(((pool.slices[0].get("spec") or {}).get("pool") or {}).get("resourceSliceCount", 0))
        pool.incomplete = len(pool.slices) != wanted
        pool.invalid_reason = _invalid_reason(pool)
    return list(pools.values())


def _invalid_reason(pool: Pool) -> str | None:
    seen: set[str] = set()
    for slice_obj in pool.slices:
        for device in (slice_obj.get("spec") or {}).get("devices") or ():
            name = str(device.get("name", ""))
            if name in seen:
                return f"duplicate device name {name}"
            seen.add(name)
    return None
