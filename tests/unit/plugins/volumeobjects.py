"""Builders for the storage objects the volume plugins read (as the API returns them), and a fake API.

Shared by the volume plugins' tests (``tests.unit.plugins.volumeobjects``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from tests.unit.framework.kubeobjects import make_node, make_pod

from secondary_scheduler.framework import Handle, NodeTable
from secondary_scheduler.kube.client import ApiError

JSON = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def storage_class(
    name: str,
    *,
    provisioner: str = "csi.example.com",
    mode: str | None = "WaitForFirstConsumer",
    allowed_topologies: Sequence[JSON] | None = None,
) -> JSON:
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "resourceVersion": "1"},
        "provisioner": provisioner,
    }
    if mode is not None:
        obj["volumeBindingMode"] = mode
    if allowed_topologies is not None:
        obj["allowedTopologies"] = list(allowed_topologies)
    return obj


def claim(
    name: str,
    *,
    namespace: str = "default",
    storage_class_name: str | None = "wffc",
    size: str | None = "1Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    volume_name: str | None = None,
    bound: bool = False,
    selected_node: str | None = None,
    selector: JSON | None = None,
    phase: str | None = None,
    deleting: bool = False,
    owner_uid: str | None = None,
    resource_version: str = "10",
) -> JSON:
    """A PVC; ``bound`` marks it as the PV controller leaves a completed binding."""
    spec: JSON = {"accessModes": list(modes)}
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    if size is not None:
        spec["resources"] = {"requests": {"storage": size}}
    if volume_name is not None:
        spec["volumeName"] = volume_name
    if selector is not None:
        spec["selector"] = selector
    annotations: JSON = {}
    if bound:
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
    if selected_node is not None:
        annotations["volume.kubernetes.io/selected-node"] = selected_node
    metadata: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "resourceVersion": resource_version,
        "annotations": annotations,
    }
    if deleting:
        metadata["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    if owner_uid is not None:
        metadata["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}]
    obj: JSON = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}
    obj["status"] = {"phase": phase or ("Bound" if bound else "Pending")}
    return obj


def volume(
    name: str,
    *,
    storage_class_name: str = "wffc",
    size: str = "1Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    hostnames: Sequence[str] | None = None,
    zones: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    claim_ref: JSON | None = None,
    phase: str = "Available",
    csi: tuple[str, str] | None = None,
    source: JSON | None = None,
    resource_version: str = "20",
    node_affinity: JSON | None = None,
) -> JSON:
    """A PV; ``hostnames``/``zones`` pin it with a required node affinity, ``csi`` = (driver, handle)."""
    spec: JSON = {
        "storageClassName": storage_class_name,
        "capacity": {"storage": size},
        "accessModes": list(modes),
    }
    expressions = []
    if hostnames is not None:
        expressions.append({"key": HOSTNAME, "operator": "In", "values": list(hostnames)})
    if zones is not None:
        expressions.append({"key": ZONE, "operator": "In", "values": list(zones)})
    if expressions:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}
    if node_affinity is not None:
        spec["nodeAffinity"] = node_affinity
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if source is not None:
        spec.update(source)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {}), "resourceVersion": resource_version},
        "spec": spec,
        "status": {"phase": phase},
    }


def claim_ref(name: str, namespace: str = "default", uid: str | None = None) -> JSON:
    ref: JSON = {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": name}
    if uid is not None:
        ref["uid"] = uid
    return ref


def csi_node(
    name: str, limits: Mapping[str, int | None], annotations: Mapping[str, str] | None = None
) -> JSON:
    drivers = []
    for driver, count in limits.items():
        item: JSON = {"name": driver, "nodeID": name}
        if count is not None:
            item["allocatable"] = {"count": count}
        drivers.append(item)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": {"drivers": drivers},
    }


def csi_driver(name: str, storage_capacity: bool = True) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": storage_capacity, "attachRequired": False},
    }


def capacity(
    name: str,
    class_name: str,
    *,
    capacity_size: str | None = "10Gi",
    maximum: str | None = None,
    node_topology: JSON | None = None,
    hostname: str | None = None,
) -> JSON:
    """A CSIStorageCapacity; ``hostname`` is the usual per-node ``matchLabels`` topology."""
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system", "resourceVersion": "1"},
        "storageClassName": class_name,
    }
    if hostname is not None:
        obj["nodeTopology"] = {"matchLabels": {HOSTNAME: hostname}}
    if node_topology is not None:
        obj["nodeTopology"] = node_topology
    if capacity_size is not None:
        obj["capacity"] = capacity_size
    if maximum is not None:
        obj["maximumVolumeSize"] = maximum
    return obj


def volume_attachment(name: str, node: str, attacher: str, pv: str) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": pv}},
    }


def pvc_volume(claim_name: str, volume_name: str | None = None) -> JSON:
    return {"name": volume_name or claim_name, "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral_volume(name: str) -> JSON:
    return {
        "name": name,
        "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}},
    }


def pod_with(name: str, volumes: Sequence[JSON], **fields: Any) -> JSON:
    return make_pod(name, volumes=list(volumes), **fields)


def nodes(count: int, zones: Sequence[str] = ()) -> list[JSON]:
    """``node-0``...: each with its hostname label and, if ``zones``, a zone in turn."""
    result = []
    for index in range(count):
        labels = {HOSTNAME: f"node-{index}"}
        if zones:
            labels[ZONE] = zones[index % len(zones)]
        result.append(make_node(f"node-{index}", labels=labels))
    return result


def fill(handle: Handle, objects: Sequence[JSON]) -> None:
    """The informers the plugins asked for, filled with ``objects`` (as ``secsched score`` does)."""
    handle.informers.fill(objects)


def names(table: NodeTable) -> list[str]:
    return [table.names[slot] for slot in table.active_slots()]


class FakeApi:
    """An API client that records updates and answers them as the API server would (a new resourceVersion)."""

    def __init__(self) -> None:
        self.replaced: list[tuple[str, JSON]] = []
        self.fail_with: ApiError | None = None
        self._version = 100

    async def replace(self, path: str, body: JSON) -> JSON:
        if self.fail_with is not None:
            raise self.fail_with
        self.replaced.append((path, body))
        self._version += 1
        answer = copy.deepcopy(body)
        answer["metadata"]["resourceVersion"] = str(self._version)
        return answer
