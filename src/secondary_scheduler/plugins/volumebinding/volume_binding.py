"""VolumeBinding: a pod's claims must be bound, or bindable, on the node it goes to.

kube-scheduler 1.34's plugin (``pkg/scheduler/framework/plugins/volumebinding``), over many
nodes at once:

- PreFilter: every claim exists, is not lost or being deleted (UnschedulableAndUnresolvable
  with the API's words, ``persistentvolumeclaim "x" not found``); a claim that should already
  be bound (Immediate class) is not: ``pod has unbound immediate PersistentVolumeClaims``.
  A pod without claims skips the plugin.
- Filter: bound volumes' node affinity; for claims whose class waits for the first
  consumer, an available volume or a provisioner that can serve the node (see ``binder``).
- Reserve/Unreserve: the chosen volumes' claimRef and the claims' selected-node annotation
  go into the informers (the assume cache), and back out if the pod does not bind.
- PreBind: the same changes go to the API server; then it waits, in the binding cycle (other
  pods keep being scheduled), until the PV controller and the provisioner have bound every
  claim, at most ``bindTimeoutSeconds``. A provisioner that gives up removes the claim's
  selected-node annotation: the error sends the pod back to be scheduled again.
- PreScore/Score: upstream scores only under the StorageCapacityScoring feature gate,
  alpha and off in 1.34; PreScore therefore always skips, as upstream's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, KubeObject, Slots
from secondary_scheduler.framework.events import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterError,
    FilterPlugin,
    PodPredicate,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    Rejection,
    ReservePlugin,
    ScorePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.framework.storage import volumes as helpers
from secondary_scheduler.framework.storage.csitranslation import MIGRATED_PLUGINS_ANNOTATION
from secondary_scheduler.plugins.volumebinding.args import VolumeBindingArgs
from secondary_scheduler.plugins.volumebinding.binder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    Assumed,
    BinderError,
    FoundVolumes,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)

_STATE_KEY = "VolumeBinding"


class VolumeBindingFilterError(FilterError):
    """An Error status from Filter (a class that vanished, a PV that cannot be translated).

    The filter interface has no error result, so it raises: the cycle fails with this
    message and the pod backs off, as upstream's Error status does.
    """


@dataclass
class _CycleData:
    """What PreFilter found and Filter decided, for Reserve and PreBind (upstream's stateData)."""

    claims: PodVolumeClaims | None = None
    """None when the pod has no claims (PreFilter skipped)."""
    table: NodeTable | None = None
    passes: list[tuple[FoundVolumes, dict[str, int]]] = field(default_factory=list)
    """Each Filter call's result and its feasible nodes' positions in it."""
    all_bound: bool = True
    assumed: Assumed | None = None
    to_write: PodVolumes | None = None

    def pod_volumes(self, node_name: str) -> PodVolumes | None:
        for found, positions in reversed(self.passes):
            position = positions.get(node_name)
            if position is not None:
                return found.pod_volumes(position)
        return None


class VolumeBinding(PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin, PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "VolumeBinding"
    args_model = VolumeBindingArgs

    def __init__(self, args: VolumeBindingArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        self.binder = VolumeBinder(
            volumes=handle.informer(PERSISTENT_VOLUMES),
            claims=handle.informer(PERSISTENT_VOLUME_CLAIMS),
            classes=handle.informer(STORAGE_CLASSES),
            csi_nodes=handle.informer(CSI_NODES),
            csi_drivers=handle.informer(CSI_DRIVERS),
            capacities=handle.informer(CSI_STORAGE_CAPACITIES),
            bind_timeout=float(args.bind_timeout_seconds),
            clock=handle.clock,
        )

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        update = ActionType.ADD | ActionType.UPDATE
        return (
            ClusterEventWithHint(ClusterEvent("StorageClass", update), _storage_class_may_help),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", update), _claim_may_help),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", update)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent("CSINode", update), _csi_node_may_help),
            ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.UPDATE), _csi_driver_may_help),
            ClusterEventWithHint(ClusterEvent("CSIStorageCapacity", update), _capacity_may_help),
        )

    # -- PreFilter / Filter -----------------------------------------------------------------
    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        has_claims, problem = self.binder.pod_has_claims(pod.obj)
        if problem is not None:
            return Status.unschedulable(problem, unresolvable=True)
        if not has_claims:
            state.write(_STATE_KEY, _CycleData())
            return SKIP
        try:
            claims = self.binder.pod_volume_claims(pod.obj)
        except BinderError as error:
            return Status.error(str(error))
        if claims.immediate:
            return Status.unschedulable(REASON_UNBOUND_IMMEDIATE, unresolvable=True)
        claims.immediate = []
        state.write(_STATE_KEY, _CycleData(claims=claims, table=table))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        data = state.read(_STATE_KEY, _CycleData)
        if data is None or data.claims is None:
            raise VolumeBindingFilterError(f'running "{self.name}" filter plugin: no PreFilter state')
        try:
            found = self.binder.find_pod_volumes(pod.obj, data.claims, table, candidates)
        except BinderError as error:
            raise VolumeBindingFilterError(f'running "{self.name}" filter plugin: {error}') from error
        feasible = np.flatnonzero(found.feasible)
        data.passes.append(
            (found, {table.names[candidates[position]]: position for position in feasible.tolist()})
        )
        return [
            Rejection(found.node_conflict, REASON_NODE_CONFLICT, unresolvable=True),
            Rejection(found.bind_conflict, REASON_BIND_CONFLICT, unresolvable=True),
            Rejection(found.not_enough_space, REASON_NOT_ENOUGH_SPACE, unresolvable=True),
            Rejection(found.pv_not_exist, REASON_PV_NOT_EXIST, unresolvable=True),
        ]

    # -- PreScore / Score (StorageCapacityScoring is off in 1.34) -----------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        return SKIP

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return np.zeros(len(nodes), dtype=np.int64)

    # -- Reserve / Unreserve ----------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data = state.read(_STATE_KEY, _CycleData)
        if data is None:
            return Status.error(f'reading "{_STATE_KEY}" from cycle state: not found')
        volumes = data.pod_volumes(node_name) if data.claims is not None else None
        if volumes is None:  # the pod has no claims
            data.all_bound = True
            return SUCCESS
        data.all_bound, data.assumed, data.to_write = self.binder.assume(pod.obj, node_name, volumes)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = state.read(_STATE_KEY, _CycleData)
        if data is not None and data.assumed is not None:
            self.binder.revert(data.assumed)

    # -- PreBind ----------------------------------------------------------------------------
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data = state.read(_STATE_KEY, _CycleData)
        if data is None:
            return Status.error(f'reading "{_STATE_KEY}" from cycle state: not found')
        if data.all_bound:
            return SUCCESS
        if data.to_write is None or data.assumed is None or data.table is None:
            return Status.error(f'no pod volume found for node "{node_name}"')
        client = self.handle.client
        if client is None:
            return Status.error("binding volumes: no API client (scheduling in memory)")
        problem = await self.binder.bind(
            client, pod.obj, node_name, data.to_write, data.assumed, data.table, pod.key
        )
        return SUCCESS if problem is None else Status.error(problem)


# -- queueing hints: which changes can let a pod this plugin rejected fit ------------------


def _claim_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A claim the pod uses was created or changed (isSchedulableAfterPersistentVolumeClaimChange)."""
    claim = new if new is not None else old
    if claim is None or helpers.namespace_of(claim) != pod.namespace:
        return False
    return any(ref.name == helpers.name_of(claim) for ref in helpers.pod_claims(pod.obj))


def _storage_class_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A new class, or a class whose allowedTopologies changed (volumeBindingMode is immutable)."""
    if old is None:
        return True
    return (old or {}).get("allowedTopologies") != (new or {}).get("allowedTopologies")


def _csi_node_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A new CSINode, or one whose migrated-plugins annotation changed."""
    if old is None:
        return True
    before = helpers.annotations_of(old).get(MIGRATED_PLUGINS_ANNOTATION)
    return before != helpers.annotations_of(new).get(MIGRATED_PLUGINS_ANNOTATION)


def _csi_driver_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A driver of the pod's inline CSI volumes stopped tracking capacity (upstream's exact test)."""
    if old is None or new is None:
        return False
    for volume in helpers.pod_volumes(pod.obj):
        csi = volume.get("csi")
        if csi is None or csi.get("driver") != helpers.name_of(new):
            continue
        if (
            helpers.spec(old).get("storageCapacity") is True
            and helpers.spec(new).get("storageCapacity") is not True
        ):
            return True
    return False


def _capacity_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A new CSIStorageCapacity, or one whose volume limit (maximumVolumeSize, else capacity) grew."""
    if old is None:
        return True
    new_limit = _volume_limit(new)
    old_limit = _volume_limit(old)
    return new_limit is not None and (old_limit is None or new_limit > old_limit)


def _volume_limit(capacity: KubeObject | None) -> int | None:
    if capacity is None:
        return None
    limit = capacity.get("maximumVolumeSize")
    if limit is None:
        limit = capacity.get("capacity")
    return None if limit is None else helpers.quantity_value(limit)
