"""The local cluster's fake DRA driver: ResourceSlices of GPUs for KWOK nodes, and their DeviceClass.

On a real cluster a DRA driver's kubelet plugin on each node publishes the node's devices as
ResourceSlices (one pool per node, named after it) and the driver's DeviceClass selects them.
KWOK nodes have no kubelet, so this process publishes for them, driven by node labels:

- ``gpu.dra.secsched.io/count``: how many GPUs the node has (0..64; unset or 0: no slice);
- ``gpu.dra.secsched.io/model``: their model (unset: ``A100``), the string attribute ``model``;
- ``gpu.dra.secsched.io/memory``: each GPU's memory (a quantity; unset: the model's, 80Gi for
  A100 and H100, 16Gi otherwise), published as the capacity ``memory`` (as real GPU drivers do)
  and as the int attribute ``memoryGiB`` for selectors that compare plain numbers;
- every GPU ``gpu-<i>`` also carries the int attributes ``index`` (i) and ``numa`` (the NUMA zone
  it sits in: the GPUs split evenly over the node's ``secsched.io/numa-zones`` zones, 2 unless set),
  so ``constraints: matchAttribute: gpu.dra.secsched.io/numa`` asks for GPUs of one zone.

The DeviceClass ``gpu.dra.secsched.io`` selects the driver's devices
(``device.driver == "gpu.dra.secsched.io"``). Slices are owned by their Node (the garbage
collector deletes them with it), named ``<node>-gpu.dra.secsched.io``, rewritten only when their
devices change (the pool's generation goes up then, as a driver's does), and deleted when the
label goes. Allocation itself is the scheduler's (it writes ``status.allocation``); a driver's
NodePrepareResources has nothing to do on a node without a kubelet.
Run as `python -m secsched_devtools.cluster.dradriver --kubeconfig K`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.kube.client import JSON, ApiClient, ApiError
from secondary_scheduler.kube.quantity import QuantityError, parse_quantity
from secsched_devtools.cluster.controllerproc import controller_main
from secsched_devtools.cluster.nodes import KWOK_ANNOTATION, NUMA_ZONES_LABEL
from secsched_devtools.cluster.watchloop import WatchLoop

log = logging.getLogger("dra-driver")

DRIVER = "gpu.dra.secsched.io"
DEVICE_CLASS = DRIVER
COUNT_LABEL = f"{DRIVER}/count"
MODEL_LABEL = f"{DRIVER}/model"
MEMORY_LABEL = f"{DRIVER}/memory"
DEFAULT_MODEL = "A100"
LARGE_MODELS = ("A100", "H100")
MAX_GPUS = 64
DEFAULT_NUMA_ZONES = 2
MANAGER = "secsched-dra-driver"
MANAGED_BY = "app.kubernetes.io/managed-by"
API_VERSION = "resource.k8s.io/v1"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
GIB = 1024**3


class GpuLabelError(ValueError):
    """A node label that asks for GPUs this driver cannot publish."""


@dataclass(frozen=True)
class NodeGpus:
    """What a node's labels ask for."""

    count: int
    model: str = DEFAULT_MODEL
    memory: str = "80Gi"
    numa_zones: int = DEFAULT_NUMA_ZONES


def node_gpus(labels: Mapping[str, str]) -> NodeGpus | None:
    """The GPUs a node's labels ask for; None when none; GpuLabelError naming the label when wrong."""
    raw = labels.get(COUNT_LABEL)
    if raw is None:
        return None
    if not raw.isdigit() or int(raw) > MAX_GPUS:
        raise GpuLabelError(
            f"label {COUNT_LABEL}={raw!r}: must be a whole number of GPUs from 0 to {MAX_GPUS}"
        )
    count = int(raw)
    if count == 0:
        return None
    model = labels.get(MODEL_LABEL, DEFAULT_MODEL)
    memory = labels.get(MEMORY_LABEL, "80Gi" if model in LARGE_MODELS else "16Gi")
    try:
        if parse_quantity(memory) <= 0:
            raise QuantityError("not positive")
    except QuantityError as error:
        raise GpuLabelError(
            f"label {MEMORY_LABEL}={memory!r}: must be a positive quantity such as 80Gi ({error})"
        ) from error
    zones_raw = labels.get(NUMA_ZONES_LABEL, str(DEFAULT_NUMA_ZONES))
    zones = int(zones_raw) if zones_raw.isdigit() and int(zones_raw) > 0 else DEFAULT_NUMA_ZONES
    return NodeGpus(count, model, memory, zones)


def gpu_devices(gpus: NodeGpus) -> list[JSON]:
    """The slice's devices: ``gpu-0``..``gpu-<count-1>``, split evenly over the NUMA zones."""
    memory_gib = int(parse_quantity(gpus.memory) // GIB)
    return [
        {
            "name": f"gpu-{index}",
            "attributes": {
                "model": {"string": gpus.model},
                "index": {"int": index},
                "numa": {"int": index * gpus.numa_zones // gpus.count},
                "memoryGiB": {"int": memory_gib},
            },
            "capacity": {"memory": {"value": gpus.memory}},
        }
        for index in range(gpus.count)
    ]


def slice_name(node: str) -> str:
    return f"{node}-{DRIVER}"


def resource_slice(node: Mapping[str, Any], devices: list[JSON], generation: int = 1) -> JSON:
    """The node's one-slice pool of ``devices``, owned by the Node."""
    meta = node["metadata"]
    name = str(meta["name"])
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta.get("uid", "")}
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {
            "name": slice_name(name),
            "labels": {MANAGED_BY: MANAGER},
            **({"ownerReferences": [owner]} if meta.get("uid") else {}),
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def device_class() -> JSON:
    """The DeviceClass that selects every device of this driver."""
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS, "labels": {MANAGED_BY: MANAGER}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


async def ensure_device_class(api: ApiClient) -> None:
    """Create the driver's DeviceClass unless it is there already (the driver and bench.dra both do)."""
    try:
        await api.create(CLASSES, device_class())
    except ApiError as error:
        if not error.conflict:
            raise


class DraDriver(WatchLoop[list[str]]):
    """Watches nodes; each pass makes the driver's slices match the nodes' labels."""

    def __init__(self, api: ApiClient, *, resync_seconds: float = 30.0) -> None:
        super().__init__(api, resync_seconds)
        self.nodes = self.watched("/api/v1/nodes", "nodes")
        self.slices = self.watched(SLICES, "slices", {"labelSelector": f"{MANAGED_BY}={MANAGER}"})
        self._refused: dict[str, str] = {}

    async def started(self) -> None:
        await ensure_device_class(self.api)
        log.info("watching nodes; publishing ResourceSlices of %s", DRIVER)

    def reconciled(self, outcome: list[str]) -> None:
        if outcome:
            log.info("ResourceSlices written or deleted: %s", ", ".join(outcome))

    def desired(self) -> dict[str, JSON]:
        """Slice name -> the slice it should be now (at generation 1: see `_next_generation`)."""
        wanted: dict[str, JSON] = {}
        for node in self.nodes.objects.values():
            meta = node["metadata"]
            if KWOK_ANNOTATION not in (meta.get("annotations") or {}):
                continue
            name = str(meta["name"])
            try:
                gpus = node_gpus(meta.get("labels") or {})
            except GpuLabelError as error:
                if self._refused.get(name) != str(error):
                    log.error("node %s: no ResourceSlice published: %s", name, error)
                    self._refused[name] = str(error)
                continue
            self._refused.pop(name, None)
            if gpus is not None:
                wanted[slice_name(name)] = resource_slice(node, gpu_devices(gpus))
        return wanted

    async def reconcile(self) -> list[str]:
        written, deleted = await self.write_objects(
            SLICES, self.slices, self.desired(), _same_slice, _next_generation
        )
        return written + [f"{name} (deleted)" for name in deleted]


def _owner_uid(slice_object: JSON) -> Any:
    """The uid of the Node that owns the slice (None when it names none)."""
    return (slice_object["metadata"].get("ownerReferences") or [{}])[0].get("uid")


def _same_slice(existing: JSON, desired: JSON) -> bool:
    """The same devices, owned by the same Node (a node deleted and created again has a new uid)."""
    same_devices = existing["spec"].get("devices") == desired["spec"]["devices"]
    return same_devices and _owner_uid(existing) == _owner_uid(desired)


def _next_generation(existing: JSON, desired: JSON) -> JSON:
    """A rewritten slice's pool goes one generation up, as a driver's does when its devices change."""
    generation = int(existing["spec"]["pool"].get("generation", 0)) + 1
    pool = {**desired["spec"]["pool"], "generation": generation}
    return {**desired, "spec": {**desired["spec"], "pool": pool}}


def main() -> None:
    controller_main(
        __doc__ or "",
        MANAGER,
        lambda api, resync: DraDriver(api, resync_seconds=resync),
        resync_help="republish at least this often",
        verbose_help="debug logging",
    )


if __name__ == "__main__":
    main()
