"""VolumeRestrictions: volumes a node, or the whole cluster, can only give to one pod.

kube-scheduler 1.34's plugin (``pkg/scheduler/framework/plugins/volumerestrictions``):

- The same disk mounted twice on one node (isVolumeConflict): a GCE PD unless every mount
  is read-only, an AWS EBS volume always, an iSCSI volume (same IQN) or a Ceph RBD image
  (a shared monitor, same pool and image) unless all mounts are read-only. Such a node gets
  ``node(s) had no available disk``.
- A claim with the ReadWriteOncePod access mode that some pod already uses, on any node:
  every node gets ``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
  access mode already in-use by another pod``. Both are plain Unschedulable: evicting the
  other pod would help, so preemption may.

PreFilter fails the pod (UnschedulableAndUnresolvable) when one of its claims does not
exist, and skips the plugin when the pod has neither kind of volume in play.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import KubeObject, Slots
from secondary_scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import PERSISTENT_VOLUME_CLAIMS
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PodPredicate,
    PreFilterPlugin,
    Rejection,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.framework.storage import volumes as helpers

REASON_DISK_CONFLICT = "node(s) had no available disk"
REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)

_STATE_KEY = "PreFilterVolumeRestrictions"
_CONFLICT_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


@dataclass
class _State:
    read_write_once_pod_claims: frozenset[str]
    """Names of the pod's claims with the ReadWriteOncePod access mode."""
    conflicting_claim_refs: int
    """How many of those some scheduled pod already uses."""


def needs_restrictions_check(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(source) is not None for source in _CONFLICT_SOURCES)


def is_volume_conflict(volume: Mapping[str, Any], existing_pod: KubeObject) -> bool:
    """Whether ``volume`` and a volume of ``existing_pod`` are the same disk, mounted in a way
    that cannot be shared (isVolumeConflict)."""
    for existing in helpers.pod_volumes(existing_pod):
        disk, other = volume.get("gcePersistentDisk"), existing.get("gcePersistentDisk")
        if (
            disk is not None
            and other is not None
            and disk.get("pdName") == other.get("pdName")
            and not (disk.get("readOnly") and other.get("readOnly"))
        ):
            return True
        ebs, other = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
        if ebs is not None and other is not None and ebs.get("volumeID") == other.get("volumeID"):
            return True
        iscsi, other = volume.get("iscsi"), existing.get("iscsi")
        if (
            iscsi is not None
            and other is not None
            and iscsi.get("iqn") == other.get("iqn")
            and not (iscsi.get("readOnly") and other.get("readOnly"))
        ):
            return True
        rbd, other = volume.get("rbd"), existing.get("rbd")
        if (
            rbd is not None
            and other is not None
            and set(rbd.get("monitors") or ()) & set(other.get("monitors") or ())
            and (rbd.get("pool") or "rbd") == (other.get("pool") or "rbd")
            and rbd.get("image") == other.get("image")
            and not (rbd.get("readOnly") and other.get("readOnly"))
        ):
            return True
    return False


class VolumeRestrictions(PreFilterPlugin, FilterPlugin):
    name: ClassVar[str] = "VolumeRestrictions"

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        self.claims = handle.informer(PERSISTENT_VOLUME_CLAIMS)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), _deleted_pod_may_help),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), _added_claim_may_help
            ),
        )

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        """ReadWriteOncePod counts the pods of the pod's namespace that use one of its claims."""
        mine = _claim_names(pod.obj)
        if not mine:
            return reads_no_pod
        return lambda other: other.namespace == pod.namespace and bool(mine & _claim_names(other.obj))

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        needs_check = any(needs_restrictions_check(volume) for volume in helpers.pod_volumes(pod.obj))
        exclusive: set[str] = set()
        for claim_name in helpers.pvc_claim_names(pod.obj):
            claim = self.claims.get(claim_name, pod.namespace)
            if claim is None:
                return Status.unschedulable(
                    helpers.not_found(helpers.PVC_RESOURCE, claim_name), unresolvable=True
                )
            if helpers.READ_WRITE_ONCE_POD in (helpers.spec(claim).get("accessModes") or ()):
                exclusive.add(helpers.name_of(claim))
        used = _claims_in_use(table, pod.namespace, exclusive) if exclusive else set()
        if not needs_check and not used:
            return SKIP
        state.write(_STATE_KEY, _State(frozenset(exclusive), len(used)))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        disk = self._disk_conflicts(pod, table, candidates)
        data = state.read(_STATE_KEY, _State)
        if data is None:
            raise RuntimeError(f'cannot read "{_STATE_KEY}" from cycleState')
        # Counted again from the table rather than kept from PreFilter: a preemption that takes
        # pods off the table to try a node sees the claim freed (upstream's RemovePod).
        in_use = bool(data.read_write_once_pod_claims) and bool(
            _claims_in_use(table, pod.namespace, set(data.read_write_once_pod_claims))
        )
        exclusive = np.full(len(candidates), in_use, dtype=np.bool_)
        return [
            Rejection(disk, REASON_DISK_CONFLICT),
            Rejection(exclusive & ~disk, REASON_READ_WRITE_ONCE_POD_CONFLICT),
        ]

    def _disk_conflicts(
        self, pod: PodInfo, table: NodeTable, candidates: Slots
    ) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """The candidates holding a pod that mounts one of this pod's disks in a conflicting way."""
        volumes = [volume for volume in helpers.pod_volumes(pod.obj) if needs_restrictions_check(volume)]
        if not volumes:
            return np.zeros(len(candidates), dtype=np.bool_)
        conflicting = {
            slot
            for existing, slot in table.all_pods()
            if any(is_volume_conflict(volume, existing.obj) for volume in volumes)
        }
        return np.isin(candidates, np.fromiter(conflicting, dtype=np.intp, count=len(conflicting)))


def _claims_in_use(table: NodeTable, namespace: str, names: set[str]) -> set[str]:
    """Which of ``names`` some pod on a node uses (the snapshot's usedPVCSet), bound or assumed."""
    used: set[str] = set()
    for existing, _ in table.pods_in_namespace(namespace):
        used.update(name for name in helpers.pvc_claim_names(existing.obj) if name in names)
        if len(used) == len(names):
            break
    return used


def _deleted_pod_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A deleted pod of the namespace mounted one of this pod's disks, or used one of its claims."""
    deleted: PodInfo | None = old
    if deleted is None or deleted.namespace != pod.namespace:
        return False
    volumes = [volume for volume in helpers.pod_volumes(pod.obj) if needs_restrictions_check(volume)]
    if any(is_volume_conflict(volume, deleted.obj) for volume in volumes):
        return True
    claims = set(helpers.pvc_claim_names(pod.obj))
    return any(name in claims for name in helpers.pvc_claim_names(deleted.obj))


def _added_claim_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A claim the pod's volumes name was created."""
    if new is None or helpers.namespace_of(new) != pod.namespace:
        return False
    return helpers.name_of(new) in helpers.pvc_claim_names(pod.obj)


def _claim_names(obj: Mapping[str, Any]) -> set[str]:
    """The names of the claims a pod uses (its ephemeral volumes' claims included)."""
    names: set[str] = set()
    name = str((obj.get("metadata") or {}).get("name", ""))
    for volume in (obj.get("spec") or {}).get("volumes") or ():
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            names.add(str(claim.get("claimName", "")))
        elif volume.get("ephemeral") is not None:
            names.add(f"{name}-{volume.get('name', '')}")
    return names
