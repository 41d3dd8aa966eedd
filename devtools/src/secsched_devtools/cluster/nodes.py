"""Fake nodes for KWOK: realistic capacity, allocatable and labels, created in parallel."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.quantity import format_bytes, format_cpu, int_value, milli_value

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
STORAGE_LABEL = "secsched.io/storage"
"""A node's local storage pool for `local-wffc` volumes (a quantity; unset: 100Gi)."""
MAX_VOLUMES_LABEL = "secsched.io/max-volumes"
"""How many `local.secsched.io` volumes the node's CSINode allows (unset: 16)."""
NUMA_ZONES_LABEL = "secsched.io/numa-zones"
"""How many NUMA zones the topology exporter publishes for the node (unset: 2)."""


@dataclass(frozen=True)
class NodeShape:
    """A machine size. Allocatable keeps back what a kubelet would reserve for the system."""

    cpu: str = "16"
    memory: str = "64Gi"
    pods: int = 110
    reserved_cpu: str = "100m"
    reserved_memory: str = "512Mi"
    storage: str | None = None
    """Local storage pool (label `secsched.io/storage`); None: the provisioner's default."""
    max_volumes: int | None = None
    """CSINode volume limit (label `secsched.io/max-volumes`); None: the provisioner's default."""
    numa_zones: int | None = None
    """NUMA zones (label `secsched.io/numa-zones`); None: the topology exporter's default (2)."""

    def capacity(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods), "ephemeral-storage": "100Gi"}

    def allocatable(self) -> dict[str, str]:
        cpu = milli_value(self.cpu) - milli_value(self.reserved_cpu)
        memory = int_value(self.memory) - int_value(self.reserved_memory)
        return {
            "cpu": format_cpu(cpu),
            "memory": format_bytes(memory),
            "pods": str(self.pods),
            "ephemeral-storage": "95Gi",
        }


# `--mixed-sizes` cycles through these, as a cluster bought over several years would.
MIXED_SHAPES = (NodeShape("8", "32Gi"), NodeShape("16", "64Gi"), NodeShape("32", "128Gi"))


def node_manifest(name: str, shape: NodeShape, zone: str) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "local",
                "node-role.kubernetes.io/worker": "",
                "type": "kwok",
            },
        },
        "spec": {},
        "status": {
            "capacity": shape.capacity(),
            "allocatable": shape.allocatable(),
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "fake"},
        },
    }
    labels = manifest["metadata"]["labels"]
    if shape.storage is not None:
        labels[STORAGE_LABEL] = shape.storage
    if shape.max_volumes is not None:
        labels[MAX_VOLUMES_LABEL] = str(shape.max_volumes)
    if shape.numa_zones is not None:
        labels[NUMA_ZONES_LABEL] = str(shape.numa_zones)
    return manifest


def plan_nodes(
    count: int, shape: NodeShape | None, zones: int, prefix: str = "kwok-node", start: int = 0
) -> list[dict[str, Any]]:
    """Node manifests named prefix-<i>, spread round-robin over zones and (mixed) shapes."""
    manifests = []
    for index in range(start, start + count):
        node_shape = shape or MIXED_SHAPES[index % len(MIXED_SHAPES)]
        zone = f"zone-{chr(ord('a') + index % max(1, zones))}"
        manifests.append(node_manifest(f"{prefix}-{index}", node_shape, zone))
    return manifests


async def create_nodes(api: ApiClient, manifests: list[dict[str, Any]], concurrency: int = 32) -> None:
    """Create (or leave as they are) the given nodes, many requests in flight at once."""
    gate = asyncio.Semaphore(concurrency)

    async def create(manifest: dict[str, Any]) -> None:
        async with gate:
            try:
                await api.create("/api/v1/nodes", manifest)
            except ApiError as error:
                if not error.conflict:
                    raise

    await asyncio.gather(*(create(manifest) for manifest in manifests))


LIFECYCLE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
"""Taints the node lifecycle controller manages: admission puts not-ready on every new node and the
controller lifts it some seconds after the node is Ready (later on a busy machine)."""


def is_ready(node: dict[str, Any]) -> bool:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def is_settled(node: dict[str, Any]) -> bool:
    """Ready, and no longer carrying a lifecycle taint: what a scheduler can place pods on."""
    taints = node.get("spec", {}).get("taints") or ()
    return is_ready(node) and not any(taint.get("key") in LIFECYCLE_TAINTS for taint in taints)
