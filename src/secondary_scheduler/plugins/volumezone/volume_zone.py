"""VolumeZone: a pod's bound volumes' zone and region labels must match the node's.

kube-scheduler 1.34's plugin (``pkg/scheduler/framework/plugins/volumezone``): PreFilter
collects the zone/region labels (GA and beta) of the volumes the pod's claims are bound
to; a value may list several zones joined by ``__``. Filter rejects, as
UnschedulableAndUnresolvable ``node(s) had no available volume zone``, a node that has
some zone or region label but not a matching one for every volume label (a beta label on
the volume is also looked up under its GA name on the node). A node with no zone or region
label at all passes (a single-zone cluster). Unbound claims of a WaitForFirstConsumer class
are left out: where they are provisioned is VolumeBinding's to decide (its Filter checks
the class's allowedTopologies); an unbound claim of any other class is an error the pod
cannot get past. The plugin has no Score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import KubeObject, Slots
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)
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
from secondary_scheduler.framework.status import SKIP, SUCCESS, Code, Status
from secondary_scheduler.framework.storage import volumes as helpers

REASON_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE_LABEL, BETA_REGION_LABEL, ZONE_LABEL, REGION_LABEL)
_GA_OF = {BETA_ZONE_LABEL: ZONE_LABEL, BETA_REGION_LABEL: REGION_LABEL}
MULTI_ZONE_DELIMITER = "__"

_STATE_KEY = "PreFilterVolumeZone"


@dataclass(frozen=True, slots=True)
class VolumeTopology:
    """One zone or region label of a volume: the node's value must be one of ``values``."""

    volume: str
    key: str
    values: frozenset[str]


def volume_topologies(volume: KubeObject) -> list[VolumeTopology]:
    """The volume's zone/region labels (getPVTopologies); a value with an empty zone is ignored."""
    labels = helpers.metadata(volume).get("labels") or {}
    result = []
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = [zone.strip() for zone in str(value).split(MULTI_ZONE_DELIMITER)]
        if any(not zone for zone in zones):
            continue  # LabelZonesToSet refuses it; upstream logs and ignores the label
        result.append(VolumeTopology(helpers.name_of(volume), key, frozenset(zones)))
    return result


class VolumeZone(PreFilterPlugin, FilterPlugin):
    name: ClassVar[str] = "VolumeZone"

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        self.volumes = handle.informer(PERSISTENT_VOLUMES)
        self.claims = handle.informer(PERSISTENT_VOLUME_CLAIMS)
        self.classes = handle.informer(STORAGE_CLASSES)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        changed = ActionType.ADD | ActionType.UPDATE
        return (
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD), _class_may_help),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", changed), _claim_may_help),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", changed), _volume_may_help),
        )

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        topologies, status = self._topologies_of(pod)
        if not status.is_success:
            return status
        if not topologies:
            return SKIP
        state.write(_STATE_KEY, _Topologies(topologies))
        return SUCCESS

    def _topologies_of(self, pod: PodInfo) -> tuple[list[VolumeTopology], Status]:
        """getPVbyPod: the topologies of the pod's bound volumes, or why the pod cannot go anywhere."""
        result: list[VolumeTopology] = []
        for claim_name in helpers.pvc_claim_names(pod.obj):
            if not claim_name:
                return [], Status.unschedulable("PersistentVolumeClaim had no name", unresolvable=True)
            claim = self.claims.get(claim_name, pod.namespace)
            if claim is None:
                return [], _not_found(helpers.PVC_RESOURCE, claim_name)
            volume_name = str(helpers.spec(claim).get("volumeName") or "")
            if not volume_name:
                class_name = helpers.claim_class(claim)
                if not class_name:
                    return [], Status.unschedulable(
                        "PersistentVolumeClaim had no pv name and storageClass name", unresolvable=True
                    )
                storage_class = self.classes.get(class_name)
                if storage_class is None:
                    return [], _not_found(helpers.STORAGE_CLASS_RESOURCE, class_name)
                mode = storage_class.get("volumeBindingMode")
                if mode is None:
                    return [], Status.unschedulable(
                        f'VolumeBindingMode not set for StorageClass "{class_name}"', unresolvable=True
                    )
                if mode == helpers.WAIT_FOR_FIRST_CONSUMER:
                    continue  # unbound volumes are VolumeBinding's
                return [], Status.unschedulable("PersistentVolume had no name", unresolvable=True)
            volume = self.volumes.get(volume_name)
            if volume is None:
                return [], _not_found(helpers.PV_RESOURCE, volume_name)
            result.extend(volume_topologies(volume))
        return result, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        if not helpers.pod_volumes(pod.obj):
            return []
        data = state.read(_STATE_KEY, _Topologies)
        if data is None:
            topologies, status = self._topologies_of(pod)
            if not status.is_success:
                every = np.ones(len(candidates), dtype=np.bool_)
                return [Rejection(every, status.message, status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]
        else:
            topologies = data.topologies
        constrained = np.zeros(len(candidates), dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            constrained |= table.label_column(key).codes[candidates] >= 0
        conflict = np.zeros(len(candidates), dtype=np.bool_)
        for topology in topologies:
            own = table.label_column(topology.key)
            present = own.codes[candidates] >= 0
            matches = own.isin(candidates, tuple(topology.values))
            ga_key = _GA_OF.get(topology.key)
            if ga_key is not None:
                # The node lacks the volume's (beta) key: its GA label is read instead.
                matches = np.where(
                    present, matches, table.label_column(ga_key).isin(candidates, tuple(topology.values))
                )
            conflict |= ~matches
        return [Rejection(constrained & conflict, REASON_CONFLICT, unresolvable=True)]


@dataclass(frozen=True)
class _Topologies:
    topologies: list[VolumeTopology]


def _not_found(resource: str, name: str) -> Status:
    return Status.unschedulable(helpers.not_found(resource, name), unresolvable=True)


def _claim_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A claim the pod's volumes name was created or changed."""
    claim = new if new is not None else old
    if claim is None or helpers.namespace_of(claim) != pod.namespace:
        return False
    return helpers.name_of(claim) in helpers.pvc_claim_names(pod.obj)


def _class_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """Only a new WaitForFirstConsumer class can help (the binding mode is immutable)."""
    return new is not None and new.get("volumeBindingMode") == helpers.WAIT_FOR_FIRST_CONSUMER


def _volume_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A new volume, or a volume whose zone/region labels changed."""
    if old is None:
        return True
    return volume_topologies(old) != volume_topologies(new or {})
