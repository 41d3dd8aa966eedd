"""The VMs' disks: node storage sized for the demo, claims waited for, and where each disk was made.

The local cluster's provisioner gives every node a 100Gi pool and 16 volumes unless a node says
otherwise (labels `secsched.io/storage`, `secsched.io/max-volumes`); VM hosts have far more,
and the demo is about load, so it labels the nodes first and waits until the provisioner's
CSINodes and CSIStorageCapacities say so: a scheduler started after that sees the sizes at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.quantity import int_value
from secondary_scheduler.kube.wait import poll_until, wait_for
from secsched_devtools.cluster.nodes import MAX_VOLUMES_LABEL, STORAGE_LABEL
from secsched_devtools.cluster.provisioner import (
    ANN_SELECTED_NODE,
    CAPACITIES,
    CSINODES,
    HOSTNAME_KEY,
    LOCAL,
    LOCAL_CLASS,
)


@dataclass(frozen=True)
class Disk:
    """One VM's root disk after the run: the PV made for its claim and the node the PV is pinned to."""

    vm_pod: str
    claim: str
    size: str
    phase: str
    volume: str
    """The PV's name ("" while unbound)."""
    volume_node: str
    """The node the PV's `kubernetes.io/hostname` node affinity names."""
    selected_node: str
    """The claim's `volume.kubernetes.io/selected-node`: what the scheduler asked for."""
    pod_node: str

    @property
    def on_pod_node(self) -> bool:
        return bool(self.volume_node) and self.volume_node == self.pod_node


async def size_node_storage(
    api: ApiClient, labels: Mapping[str, Mapping[str, str]], timeout: float = 60
) -> None:
    """Label every node with its storage pool and volume limit, then wait for the provisioner to
    publish them (CSINode `allocatable.count`, CSIStorageCapacity of `local-wffc`)."""
    for node, node_labels in labels.items():
        await api.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": dict(node_labels)}})

    async def published() -> bool:
        csinodes = {item["metadata"]["name"]: item for item in (await api.list_all(CSINODES))["items"]}
        capacities = {
            (item.get("nodeTopology") or {}).get("matchLabels", {}).get(HOSTNAME_KEY): item
            for item in (await api.list_all(CAPACITIES))["items"]
            if item.get("storageClassName") == LOCAL_CLASS
        }
        for node, node_labels in labels.items():
            drivers = (csinodes.get(node) or {}).get("spec", {}).get("drivers") or []
            counts = [(d.get("allocatable") or {}).get("count") for d in drivers if d.get("name") == LOCAL]
            capacity = (capacities.get(node) or {}).get("capacity")
            if counts != [int(node_labels[MAX_VOLUMES_LABEL])] or capacity is None:
                return False
            if int_value(capacity) != int_value(node_labels[STORAGE_LABEL]):
                return False
        return True

    await wait_for(
        published, "the provisioner to publish the nodes' storage sizes", timeout=timeout, interval=0.5
    )


async def claims(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    items = (await api.list_all(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"))["items"]
    return {item["metadata"]["name"]: item for item in items}


async def wait_claims_bound(
    api: ApiClient,
    namespace: str,
    names: list[str],
    progress: Callable[[str], None],
    label: str,
    timeout: float = 180,
) -> None:
    """Until every named claim is Bound; the error names the ones that are not, and why."""

    def pending(current: dict[str, dict[str, Any]]) -> list[str]:
        return [name for name in names if (current.get(name) or {}).get("status", {}).get("phase") != "Bound"]

    def timed_out(current: dict[str, dict[str, Any]]) -> str:
        left = pending(current)
        shown = ", ".join(f"{name} ({_claim_state(current.get(name))})" for name in left[:5])
        return (
            f"{label}: {len(left)} of {len(names)} VM disks not Bound after {timeout:.0f}s: {shown}"
            f"{' …' if len(left) > 5 else ''}; see the claims' events and the cluster's "
            "logs/storage-provisioner.log"
        )

    await poll_until(
        lambda: claims(api, namespace),
        lambda current: not pending(current),
        timed_out,
        timeout,
        interval=1,
        waiting=lambda current: progress(
            f"{label}: {len(names) - len(pending(current))}/{len(names)} disks Bound"
        ),
    )
    progress(f"{label}: all {len(names)} disks Bound")


def _claim_state(claim: dict[str, Any] | None) -> str:
    if claim is None:
        return "missing"
    phase = (claim.get("status") or {}).get("phase", "?")
    node = (claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
    return f"{phase}, selected-node {node}" if node else f"{phase}, no node selected yet"


def volume_node(volume: Mapping[str, Any]) -> str:
    """The node a node-local PV is pinned to (its `kubernetes.io/hostname In [node]` term), else ""."""
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            values = expression.get("values") or []
            if (
                expression.get("key") == HOSTNAME_KEY
                and expression.get("operator") == "In"
                and len(values) == 1
            ):
                return str(values[0])
    return ""


async def disks(api: ApiClient, namespace: str, pods: Mapping[str, Mapping[str, Any]]) -> list[Disk]:
    """Every root disk of the VM pods given (pod name -> pod), in the pods' order."""
    current = await claims(api, namespace)
    volumes = {
        item["metadata"]["name"]: item for item in (await api.list_all("/api/v1/persistentvolumes"))["items"]
    }
    found = []
    for name, pod in pods.items():
        for volume in pod.get("spec", {}).get("volumes") or []:
            claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim_name:
                continue
            claim = current.get(claim_name) or {"metadata": {"name": claim_name}, "spec": {}, "status": {}}
            volume_name = claim.get("spec", {}).get("volumeName") or ""
            found.append(
                Disk(
                    vm_pod=name,
                    claim=claim_name,
                    size=str(claim["spec"].get("resources", {}).get("requests", {}).get("storage", "")),
                    phase=str((claim.get("status") or {}).get("phase", "missing")),
                    volume=volume_name,
                    volume_node=volume_node(volumes.get(volume_name) or {}),
                    selected_node=(claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE, ""),
                    pod_node=str(pod.get("spec", {}).get("nodeName") or ""),
                )
            )
    return found
