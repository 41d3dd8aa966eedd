"""The local cluster's storage: a small external provisioner for two storage classes.

KWOK nodes have no disks and no kubelet, so nothing would ever provision or bind a volume,
and the scheduler's volume plugins would have nothing real to work against. This process
plays the storage vendor's part, the way hostpath-provisioner or TopoLVM do on a real
cluster, and leaves everything else to kube-controller-manager's PV controller:

- `local.secsched.io` (class `local-wffc`, WaitForFirstConsumer): once the scheduler has
  written `volume.kubernetes.io/selected-node` on a claim and the PV controller has handed
  the claim over (`volume.kubernetes.io/storage-provisioner`), a PV pinned to that node
  (`kubernetes.io/hostname In [node]`) and pre-bound to the claim is created; the PV
  controller then binds them. Each node has a storage pool (label `secsched.io/storage`,
  default 100Gi) published as one CSIStorageCapacity per node, and a CSINode whose
  allocatable count (label `secsched.io/max-volumes`, default 16) is the node's volume limit.
- `zonal.secsched.io` (class `zonal-immediate`, Immediate): every handed-over claim gets a
  PV in one zone (the class's `allowedTopologies`, else round-robin over the nodes' zones).

PVs use a CSI source with the provisioner as driver, so kube-scheduler's NodeVolumeLimits
counts them against the CSINode limit once bound, as it does for any CSI volume. Released
PVs of ours with reclaim policy Delete are deleted. Everything is level-triggered: each pass
compares what the watches show with what should exist, so a restart or a lost connection
only delays the work.

Run as `python -m secsched_devtools.cluster.provisioner --kubeconfig K`.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import itertools
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from secondary_scheduler.kube.client import JSON, ApiClient, ApiError
from secondary_scheduler.kube.quantity import QuantityError, format_bytes, int_value
from secondary_scheduler.kube.store import ObjectStore
from secsched_devtools.cluster.controllerproc import controller_main
from secsched_devtools.cluster.nodes import MAX_VOLUMES_LABEL, STORAGE_LABEL
from secsched_devtools.cluster.watchloop import WatchLoop

log = logging.getLogger("provisioner")

LOCAL = "local.secsched.io"
ZONAL = "zonal.secsched.io"
PROVISIONERS = (LOCAL, ZONAL)
LOCAL_CLASS = "local-wffc"
ZONAL_CLASS = "zonal-immediate"

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
DEFAULT_STORAGE = "100Gi"
DEFAULT_MAX_VOLUMES = 16

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_NODE = "local.secsched.io/node"
"""On a local PV: the node whose pool it takes its capacity from."""

MANAGER = "secsched-provisioner"
MANAGED_BY = "app.kubernetes.io/managed-by"
CAPACITY_NAMESPACE = "kube-system"
CAPACITY_LABELS = {"csi.storage.k8s.io/drivername": LOCAL, "csi.storage.k8s.io/managed-by": MANAGER}

CSINODES = "/apis/storage.k8s.io/v1/csinodes"
CAPACITIES = f"/apis/storage.k8s.io/v1/namespaces/{CAPACITY_NAMESPACE}/csistoragecapacities"
PVS = "/api/v1/persistentvolumes"


def storage_manifests() -> list[JSON]:
    """What an admin would deploy with the driver: its CSIDriver and the two StorageClasses."""
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": LOCAL, "labels": {MANAGED_BY: MANAGER}},
            "spec": {
                "attachRequired": False,
                "podInfoOnMount": False,
                "storageCapacity": True,
                "volumeLifecycleModes": ["Persistent"],
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": LOCAL_CLASS,
                "labels": {MANAGED_BY: MANAGER},
                "annotations": {ANN_DEFAULT_CLASS: "true"},
            },
            "provisioner": LOCAL,
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete",
            "allowVolumeExpansion": False,
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": ZONAL_CLASS, "labels": {MANAGED_BY: MANAGER}},
            "provisioner": ZONAL,
            "volumeBindingMode": "Immediate",
            "reclaimPolicy": "Delete",
            "allowVolumeExpansion": False,
        },
    ]


async def install(api: ApiClient) -> list[str]:
    """Server-side apply the CSIDriver and StorageClasses; returns 'Kind/name' of each."""
    applied = []
    for manifest in storage_manifests():
        await api.apply(manifest, MANAGER)
        applied.append(f"{manifest['kind']}/{manifest['metadata']['name']}")
    return applied


# -- reading objects ---------------------------------------------------------------------
# Read-only views (no copies: a pass reads these for every node).
def _meta(obj: JSON) -> JSON:
    meta: JSON = obj.get("metadata") or {}
    return meta


def _annotations(obj: JSON) -> dict[str, str]:
    annotations: dict[str, str] = _meta(obj).get("annotations") or {}
    return annotations


def _labels(obj: JSON) -> dict[str, str]:
    labels: dict[str, str] = _meta(obj).get("labels") or {}
    return labels


def _bytes(value: Any, default: int = 0) -> int:
    try:
        return int_value(value) if value is not None else default
    except (QuantityError, ValueError, TypeError):
        return default


_DEFAULT_STORAGE_BYTES = int_value(DEFAULT_STORAGE)


def node_storage(node: JSON) -> int:
    """The node's storage pool in bytes: label `secsched.io/storage`, else 100Gi."""
    return _bytes(_labels(node).get(STORAGE_LABEL), _DEFAULT_STORAGE_BYTES)


def node_max_volumes(node: JSON) -> int:
    """How many of our volumes the node takes: label `secsched.io/max-volumes`, else 16."""
    value = _labels(node).get(MAX_VOLUMES_LABEL, "")
    return int(value) if value.isdigit() else DEFAULT_MAX_VOLUMES


def claim_provisioner(claim: JSON) -> str:
    """Who the PV controller handed the claim to (it writes this only for external provisioners)."""
    annotations = _annotations(claim)
    return annotations.get(ANN_STORAGE_PROVISIONER) or annotations.get(ANN_BETA_STORAGE_PROVISIONER) or ""


def pv_name(claim: JSON) -> str:
    """external-provisioner's naming: one PV per claim, so a retried create cannot make two."""
    return f"pvc-{_meta(claim)['uid']}"


def _dns_name(*parts: str) -> str:
    """`a-b`, or a hashed form when that would be longer than a DNS subdomain may be."""
    name = "-".join(parts)
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{parts[0][:200]}-{digest}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _affinity(key: str, value: str) -> JSON:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


class ProvisioningFailed(Exception):
    """This claim cannot be provisioned as it is; `reschedule` asks the scheduler to pick again."""

    def __init__(self, message: str, reschedule: bool = False) -> None:
        super().__init__(message)
        self.reschedule = reschedule


@dataclass
class Counts:
    """What one pass did, for the log."""

    provisioned: int = 0
    deleted: int = 0
    csinodes: int = 0
    capacities: int = 0


class Provisioner(WatchLoop[Counts]):
    """Watches claims, volumes, classes, nodes and our CSI objects; each pass closes the gaps."""

    settle_seconds = 0.1

    def __init__(self, api: ApiClient, *, concurrency: int = 16, resync_seconds: float = 30.0) -> None:
        super().__init__(api, resync_seconds)
        self.concurrency = concurrency
        self.nodes = self.watched("/api/v1/nodes", "nodes")
        self.claims = self.watched("/api/v1/persistentvolumeclaims", "claims")
        self.volumes = self.watched(PVS, "volumes")
        self.classes = self.watched("/apis/storage.k8s.io/v1/storageclasses", "classes")
        self.csinodes = self.watched(CSINODES, "csinodes")
        self.capacities = self.watched(
            CAPACITIES, "capacities", {"labelSelector": f"csi.storage.k8s.io/managed-by={MANAGER}"}
        )
        self._zones = itertools.count()
        self._reported: dict[str, str] = {}
        """claim uid -> resourceVersion already told it cannot be provisioned (one event each)."""
        self._instance = socket.gethostname()

    # -- the loop --------------------------------------------------------------------------
    async def started(self) -> None:
        log.info("watching nodes, claims and volumes; serving %s", ", ".join(PROVISIONERS))

    def reconciled(self, outcome: Counts) -> None:
        if outcome.csinodes or outcome.capacities:
            log.info(
                "CSINodes: %d changed; CSIStorageCapacities: %d changed",
                outcome.csinodes,
                outcome.capacities,
            )

    async def reconcile(self) -> Counts:
        """One pass: provision, delete released volumes, then CSINodes and capacities."""
        counts = Counts()
        uids = {str(_meta(claim).get("uid")) for claim in self.claims.objects.values()}
        self._reported = {uid: version for uid, version in self._reported.items() if uid in uids}
        for claim in sorted(
            self.claims.objects.values(), key=lambda c: _meta(c).get("creationTimestamp", "")
        ):
            if await self._provision_if_needed(claim):
                counts.provisioned += 1
        for volume in list(self.volumes.objects.values()):
            if await self._delete_if_released(volume):
                counts.deleted += 1
        counts.csinodes = await self._run_all(self._csinode_changes())
        counts.capacities = await self._run_all(self._capacity_changes())
        return counts

    async def _run_all(self, changes: Iterable[Callable[[], Awaitable[None]]]) -> int:
        """Run writes a few at a time; a refused one is logged and retried on a later pass."""
        gate = asyncio.Semaphore(self.concurrency)
        done = 0

        async def one(change: Callable[[], Awaitable[None]]) -> None:
            nonlocal done
            async with gate:
                try:
                    await change()
                    done += 1
                except ApiError as error:
                    log.warning("%s", error)

        await asyncio.gather(*(one(change) for change in changes))
        return done

    # -- provisioning ----------------------------------------------------------------------
    def _class_of(self, claim: JSON) -> JSON | None:
        name = (claim.get("spec") or {}).get("storageClassName")
        return self.classes.objects.get(name) if name else None

    async def _provision_if_needed(self, claim: JSON) -> bool:
        spec = claim.get("spec") or {}
        meta = _meta(claim)
        storage_class = self._class_of(claim)
        if (
            storage_class is None
            or storage_class.get("provisioner") not in PROVISIONERS
            or spec.get("volumeName")
            or meta.get("deletionTimestamp")
            or claim_provisioner(claim) != storage_class.get("provisioner")
            or pv_name(claim) in self.volumes.objects
        ):
            return False
        wait_for_node = storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"
        if wait_for_node and not _annotations(claim).get(ANN_SELECTED_NODE):
            return False
        try:
            volume = self._volume_for(claim, storage_class)
        except ProvisioningFailed as error:
            await self._refuse(claim, str(error), error.reschedule)
            return False
        try:
            created = await self.api.create(PVS, volume)
        except ApiError as error:
            if error.conflict:  # made by an earlier pass whose watch event has not arrived yet
                return False
            message = f"creating PV {volume['metadata']['name']}: {error}"
            log.warning("claim %s/%s: %s", meta.get("namespace"), meta.get("name"), message)
            await self._event(claim, "Warning", "ProvisioningFailed", message)
            return False
        self.volumes.event("ADDED", created)
        where = _annotations(created).get(ANN_NODE) or _labels(created).get(ZONE_KEY, "")
        size = created["spec"]["capacity"]["storage"]
        log.info(
            "provisioned PV %s (%s, %s on %s) for claim %s/%s",
            created["metadata"]["name"],
            storage_class["provisioner"],
            size,
            where,
            meta.get("namespace"),
            meta.get("name"),
        )
        await self._event(
            claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {created['metadata']['name']}",
        )
        return True

    def _volume_for(self, claim: JSON, storage_class: JSON) -> JSON:
        """The PV for this claim, pre-bound to it, with the topology its provisioner gives."""
        spec = claim.get("spec") or {}
        meta = _meta(claim)
        provisioner = str(storage_class["provisioner"])
        request = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        if request is None or _bytes(request, -1) < 0:
            raise ProvisioningFailed(
                "the claim has no valid storage request (spec.resources.requests.storage)"
            )
        access_modes = list(spec.get("accessModes") or ["ReadWriteOnce"])
        volume_mode = spec.get("volumeMode") or "Filesystem"
        name = pv_name(claim)
        annotations = {ANN_PROVISIONED_BY: provisioner}
        labels: dict[str, str] = {}
        attributes: dict[str, str] = {}
        if provisioner == LOCAL:
            if "ReadWriteMany" in access_modes:
                raise ProvisioningFailed(f"{LOCAL} volumes live on one node: ReadWriteMany is not supported")
            node = self._selected_node(claim)
            free = self.free_storage(node)
            if _bytes(request) > free:
                available = format_bytes(free) or "0"
                raise ProvisioningFailed(
                    f"not enough storage on node {node}: {request} requested, {available} free",
                    reschedule=True,
                )
            annotations[ANN_NODE] = node
            affinity = _affinity(HOSTNAME_KEY, node)
            attributes["node"] = node
        else:
            zone = self._zone_for(claim, storage_class)
            labels[ZONE_KEY] = zone
            affinity = _affinity(ZONE_KEY, zone)
            attributes["zone"] = zone
        csi: JSON = {"driver": provisioner, "volumeHandle": name, "volumeAttributes": attributes}
        if volume_mode == "Filesystem":
            csi["fsType"] = "ext4"
        volume: JSON = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": annotations, "labels": labels},
            "spec": {
                "capacity": {"storage": request},
                "accessModes": access_modes,
                "volumeMode": volume_mode,
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "storageClassName": storage_class["metadata"]["name"],
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
                "nodeAffinity": affinity,
                "csi": csi,
            },
        }
        if storage_class.get("mountOptions"):
            volume["spec"]["mountOptions"] = list(storage_class["mountOptions"])
        return volume

    def _selected_node(self, claim: JSON) -> str:
        node = _annotations(claim).get(ANN_SELECTED_NODE, "")
        if node not in self.nodes.objects:
            raise ProvisioningFailed(f"selected node {node!r} does not exist", reschedule=True)
        return node

    def _zone_for(self, claim: JSON, storage_class: JSON) -> str:
        """The selected node's zone if the scheduler chose one; else the class's allowed zones
        or the nodes' zones, taken in turn."""
        selected = _annotations(claim).get(ANN_SELECTED_NODE)
        if selected:
            zone = _labels(self.nodes.objects.get(selected) or {}).get(ZONE_KEY)
            if zone:
                return zone
        allowed = sorted(
            {
                value
                for term in storage_class.get("allowedTopologies") or []
                for expression in term.get("matchLabelExpressions") or []
                if expression.get("key") == ZONE_KEY
                for value in expression.get("values") or []
            }
        )
        zones = allowed or sorted(
            {_labels(node)[ZONE_KEY] for node in self.nodes.objects.values() if _labels(node).get(ZONE_KEY)}
        )
        if not zones:
            raise ProvisioningFailed(f"no node carries a {ZONE_KEY} label and the class allows no zone")
        return zones[next(self._zones) % len(zones)]

    def used_storage(self) -> dict[str, int]:
        """Bytes taken from each node's pool by our local PVs that are not being deleted."""
        used: dict[str, int] = {}
        for volume in self.volumes.objects.values():
            node = _annotations(volume).get(ANN_NODE)
            if (
                node
                and _annotations(volume).get(ANN_PROVISIONED_BY) == LOCAL
                and not _meta(volume).get("deletionTimestamp")
            ):
                size = _bytes(((volume.get("spec") or {}).get("capacity") or {}).get("storage"))
                used[node] = used.get(node, 0) + size
        return used

    def free_storage(self, node: str) -> int:
        total = node_storage(self.nodes.objects.get(node) or {})
        return max(0, total - self.used_storage().get(node, 0))

    async def _refuse(self, claim: JSON, message: str, reschedule: bool) -> None:
        """Say once per claim version why it cannot be provisioned; hand a node choice back."""
        meta = _meta(claim)
        uid, version = str(meta.get("uid")), str(meta.get("resourceVersion"))
        if self._reported.get(uid) == version:
            return
        self._reported[uid] = version
        log.warning("cannot provision claim %s/%s: %s", meta.get("namespace"), meta.get("name"), message)
        await self._event(claim, "Warning", "ProvisioningFailed", message)
        if reschedule and _annotations(claim).get(ANN_SELECTED_NODE):
            # external-provisioner's answer to a node that cannot hold the volume: drop the
            # scheduler's choice, so it schedules the pod again with this node ruled out.
            path = f"/api/v1/namespaces/{meta['namespace']}/persistentvolumeclaims/{meta['name']}"
            patch = {"metadata": {"annotations": {ANN_SELECTED_NODE: None}}}
            try:
                self.claims.event("MODIFIED", await self.api.patch(path, patch))
            except ApiError as error:
                if not error.not_found:
                    log.warning("claim %s/%s: %s", meta.get("namespace"), meta.get("name"), error)

    async def _event(self, claim: JSON, kind: str, reason: str, message: str) -> None:
        """An Event on the claim, as external-provisioner reports; losing one is harmless."""
        meta = _meta(claim)
        now = _now()
        provisioner = claim_provisioner(claim) or MANAGER
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": kind,
            "reason": reason,
            "message": message,
            "source": {"component": f"{provisioner}_{self._instance}"},
            "reportingComponent": provisioner,
            "reportingInstance": self._instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.api.create(f"/api/v1/namespaces/{meta['namespace']}/events", event)
        except ApiError as error:
            log.debug("event %s on %s/%s not recorded: %s", reason, meta["namespace"], meta["name"], error)

    # -- deletion --------------------------------------------------------------------------
    async def _delete_if_released(self, volume: JSON) -> bool:
        spec = volume.get("spec") or {}
        if (
            _annotations(volume).get(ANN_PROVISIONED_BY) not in PROVISIONERS
            or (volume.get("status") or {}).get("phase") != "Released"
            or spec.get("persistentVolumeReclaimPolicy") != "Delete"
            or _meta(volume).get("deletionTimestamp")
        ):
            return False
        name = _meta(volume)["name"]
        try:
            deleted = await self.api.delete(f"{PVS}/{name}")
        except ApiError as error:
            if error.not_found:
                self.volumes.event("DELETED", volume)
                return False
            log.warning("deleting PV %s: %s", name, error)
            return False
        if deleted.get("kind") == "PersistentVolume" and _meta(deleted).get("deletionTimestamp"):
            # Still there until the pv-protection finalizer goes; its storage counts as free.
            self.volumes.event("MODIFIED", deleted)
        else:
            self.volumes.event("DELETED", volume)
        claim = spec.get("claimRef") or {}
        log.info(
            "deleted PV %s (%s released by claim %s/%s)",
            name,
            spec.get("capacity", {}).get("storage"),
            claim.get("namespace"),
            claim.get("name"),
        )
        return True

    # -- CSINodes ----------------------------------------------------------------------
    def _csinode(self, node: JSON) -> JSON:
        meta = _meta(node)
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {
                "name": meta["name"],
                "labels": {MANAGED_BY: MANAGER},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta["uid"]}
                ],
            },
            "spec": {
                "drivers": [
                    {
                        "name": LOCAL,
                        "nodeID": meta["name"],
                        "topologyKeys": [HOSTNAME_KEY],
                        "allocatable": {"count": node_max_volumes(node)},
                    }
                ]
            },
        }

    def _csinode_changes(self) -> list[Callable[[], Awaitable[None]]]:
        """Creates for new nodes, re-creates for changed limits (a CSINode driver is immutable
        while MutableCSINodeAllocatableCount is off), deletes for nodes gone. CSINodes that
        someone else made are left alone."""
        changes: list[Callable[[], Awaitable[None]]] = []
        for name, node in self.nodes.objects.items():
            current = self.csinodes.objects.get(name)
            if current is None:
                changes.append(partial(self._create_csinode, self._csinode(node)))
            elif _labels(current).get(MANAGED_BY) == MANAGER and _drivers(current) != {
                LOCAL: node_max_volumes(node)
            }:
                changes.append(partial(self._recreate_csinode, current, self._csinode(node)))
        for name, current in list(self.csinodes.objects.items()):
            if name not in self.nodes.objects and _labels(current).get(MANAGED_BY) == MANAGER:
                changes.append(partial(self._delete, CSINODES, current, self.csinodes))
        return changes

    async def _create_csinode(self, desired: JSON) -> None:
        try:
            self.csinodes.event("ADDED", await self.api.create(CSINODES, desired))
        except ApiError as error:
            if not error.conflict:
                raise

    async def _recreate_csinode(self, current: JSON, desired: JSON) -> None:
        await self._delete(CSINODES, current, self.csinodes)
        await self._create_csinode(desired)
        log.debug("CSINode %s: %s volumes allocatable", _meta(desired)["name"], _drivers(desired)[LOCAL])

    async def _delete(self, collection: str, obj: JSON, store: ObjectStore) -> None:
        try:
            await self.api.delete(f"{collection}/{_meta(obj)['name']}")
        except ApiError as error:
            if not error.not_found:
                raise
        store.event("DELETED", obj)

    # -- CSIStorageCapacity ------------------------------------------------------------
    def _capacity(self, storage_class: str, node: JSON, free: int) -> JSON:
        meta = _meta(node)
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {
                "name": _dns_name(storage_class, meta["name"]),
                "namespace": CAPACITY_NAMESPACE,
                "labels": dict(CAPACITY_LABELS),
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta["uid"]}
                ],
            },
            "storageClassName": storage_class,
            "nodeTopology": {"matchLabels": {HOSTNAME_KEY: meta["name"]}},
            "capacity": format_bytes(free) or "0",
        }

    def _capacity_changes(self) -> list[Callable[[], Awaitable[None]]]:
        """One CSIStorageCapacity per (class of `local.secsched.io`, node): the node's free pool."""
        local_classes = sorted(
            name for name, obj in self.classes.objects.items() if obj.get("provisioner") == LOCAL
        )
        existing: dict[tuple[str, str], JSON] = {}
        for obj in self.capacities.objects.values():
            node = ((obj.get("nodeTopology") or {}).get("matchLabels") or {}).get(HOSTNAME_KEY, "")
            existing[(str(obj.get("storageClassName")), node)] = obj
        used = self.used_storage()
        changes: list[Callable[[], Awaitable[None]]] = []
        wanted = set()
        for name, node in self.nodes.objects.items():
            free = max(0, node_storage(node) - used.get(name, 0))
            for storage_class in local_classes:
                wanted.add((storage_class, name))
                current = existing.get((storage_class, name))
                if current is None:
                    desired = self._capacity(storage_class, node, free)
                    changes.append(partial(self._create_capacity, desired))
                elif not _same_quantity(current.get("capacity"), free):
                    changes.append(partial(self._set_capacity, current, free))
        for key, current in existing.items():
            if key not in wanted:
                changes.append(partial(self._delete, CAPACITIES, current, self.capacities))
        return changes

    async def _create_capacity(self, desired: JSON) -> None:
        try:
            self.capacities.event("ADDED", await self.api.create(CAPACITIES, desired))
        except ApiError as error:
            if not error.conflict:
                raise

    async def _set_capacity(self, current: JSON, free: int) -> None:
        name = _meta(current)["name"]
        patch = {"capacity": format_bytes(free) or "0"}
        self.capacities.event("MODIFIED", await self.api.patch(f"{CAPACITIES}/{name}", patch))
        log.debug("capacity %s: %s free", name, patch["capacity"])


def _same_quantity(value: Any, count: int) -> bool:
    """Whether a quantity is `count`; the API server writes ours back as we sent them, so
    comparing text first spares parsing thousands of them on every pass."""
    return value == (format_bytes(count) or "0") or _bytes(value, -1) == count


def _drivers(csinode: JSON) -> dict[str, int | None]:
    """Driver name -> allocatable count, what decides whether a CSINode is as it should be."""
    return {
        str(driver.get("name")): (driver.get("allocatable") or {}).get("count")
        for driver in (csinode.get("spec") or {}).get("drivers") or []
    }


def main() -> None:
    controller_main(
        __doc__ or "",
        "secsched-provisioner",
        lambda api, resync: Provisioner(api, resync_seconds=resync),
        resync_help="reconcile at least this often, changes or not",
        verbose_help="debug logging: every capacity change and API request",
    )


if __name__ == "__main__":
    main()
