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

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

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


class DeviceID(NamedTuple):
    """A device as allocation results name it (a tuple: hashed in C, the search hashes it often)."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


PoolDevice = tuple[DeviceID, KubeObject, int]
"""A device of a pool: its ID, its slice and its index in the slice's devices."""


@dataclass
class Pool:
    driver: str
    name: str
    generation: int
    slices: list[KubeObject] = field(default_factory=list)
    incomplete: bool = False
    invalid_reason: str | None = None
    devices: list[PoolDevice] = field(default_factory=list)
    """Every device of the pool's slices in order (built once: the search walks it per node)."""

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
        pool.devices = [
            (DeviceID(pool.driver, pool.name, str(device.get("name", ""))), slice_obj, index)
            for slice_obj in pool.slices
            for index, device in enumerate((slice_obj.get("spec") or {}).get("devices") or ())
        ]
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


class SliceIndex:
    """Each node's pools, kept across cycles while the slices stay the same objects in the same order.

    The informer hands a new object for every changed slice, so comparing the slice list by
    identity (cheap) tells whether anything changed. When something did, only the nodes whose
    own slices changed gather their pools again (all of them if a slice for several nodes
    changed); a pool's device IDs are built once with it. Nodes are matched by name, and also
    by object when slices for several nodes exist (their node selectors read the node's labels).
    A node without slices of its own shares the pools of every node that the same slices for
    several nodes serve (they are the same pools), so Filter does not gather them per node.
    """

    def __init__(self) -> None:
        self._slices: list[KubeObject] = []
        self._node_local: dict[str, list[KubeObject]] = {}
        """Slices for one node by name (most of them): a node reads its own, not every node's."""
        self._shared: list[KubeObject] = []
        """Slices for ``allNodes``, a ``nodeSelector`` (or that say nothing: skipped per node)."""
        self._pools: dict[str, tuple[KubeObject, list[Pool]]] = {}
        """Node name -> (the node object the pools were gathered for, its pools)."""
        self._shared_pools: dict[tuple[int, ...], list[Pool]] = {}
        """The positions in ``_shared`` of the slices a node without slices of its own matches ->
        their pools (bounded by the distinct sets of slices nodes match, not by the nodes)."""

    def refresh(self, slices: Sequence[KubeObject]) -> None:
        """Take the cycle's slices; the cached pools of nodes whose slices changed are dropped."""
        if _same(slices, self._slices):
            return
        node_local: dict[str, list[KubeObject]] = {}
        shared: list[KubeObject] = []
        for slice_obj in slices:
            node_name = (slice_obj.get("spec") or {}).get("nodeName")
            if node_name:
                node_local.setdefault(str(node_name), []).append(slice_obj)
            else:
                shared.append(slice_obj)
        if not _same(shared, self._shared):
            self._pools.clear()
            self._shared_pools.clear()
        else:
            changed = [
                name
                for name in self._pools
                if not _same(node_local.get(name, []), self._node_local.get(name, []))
            ]
            for name in changed:
                del self._pools[name]
        self._slices, self._node_local, self._shared = list(slices), node_local, shared

    def pools(self, node: KubeObject) -> list[Pool]:
        """The pools of devices the node can reach (``gather_pools``; a refusal is raised each time).

        Only nodes with slices of their own are kept (their entries go with their slices), so
        nodes that come and go without slices leave nothing behind."""
        name = str((node.get("metadata") or {}).get("name", ""))
        own = self._node_local.get(name)
        if own is None:
            return self._pools_of_shared(node) if self._shared else []
        cached = self._pools.get(name)
        if cached is not None and (not self._shared or cached[0] is node):
            return cached[1]
        pools = gather_pools([*self._shared, *own], node)
        self._pools[name] = (node, pools)
        return pools

    def _pools_of_shared(self, node: KubeObject) -> list[Pool]:
        """The pools of the slices for several nodes that serve ``node``: gathered once per set
        of slices served (a refusal is not kept, so it is raised each time)."""
        served = tuple(
            position
            for position, slice_obj in enumerate(self._shared)
            if _slice_matches_node(slice_obj.get("spec") or {}, node)
        )
        pools = self._shared_pools.get(served)
        if pools is None:
            pools = gather_pools(self._shared, node)
            self._shared_pools[served] = pools
        return pools


def _same(these: Sequence[KubeObject], those: Sequence[KubeObject]) -> bool:
    return len(these) == len(those) and all(map(operator.is_, these, those))
