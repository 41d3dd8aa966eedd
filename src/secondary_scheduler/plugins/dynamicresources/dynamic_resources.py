"""DynamicResources: pods with ResourceClaims get devices, as kube-scheduler 1.34 allocates them.

Upstream's plugin (``pkg/scheduler/framework/plugins/dynamicresources``) with 1.34's default
gates, for structured parameters:

- PreFilter finds the pod's claims (``claims.pod_claims``: a claim missing, being deleted or
  not the pod's own leaves the pod unschedulable with upstream's words), refuses a claim
  allocated and reserved for as many consumers as allowed ("resourceclaim in use") or being
  allocated by another pod's cycle, checks the classes its requests name, and prepares an
  ``Allocator`` over the slices, classes and the devices already held (allocated claims,
  plus allocations this scheduler has reserved but not yet written). A pod without claims
  skips the plugin.
- Filter, per node: an allocated claim's ``nodeSelector`` must match ("resourceclaim not
  available on the node"); the unallocated claims must all fit ("cannot allocate all
  claims"). A CEL selector failing, a class gone or an invalid pool is an Error (the cycle
  fails with it), as upstream's statusError.
- PostFilter deallocates a claim that keeps the pod off every node when no other pod uses it.
- Reserve keeps the chosen node's allocations in flight (other cycles count their devices);
  Unreserve drops them and takes back reservations written for the pod.
- PreBind writes, per claim, the finalizer, ``status.allocation`` and the pod in
  ``status.reservedFor``, re-reading the claim after a conflict (upstream's bindClaim), and
  assumes the written claim until the watch brings it back.

Refused loudly (see ``limitation.ENABLED_WARNING``): fields of gates 1.34 leaves off, and
selectors using CEL libraries the evaluator lacks (``cel_env``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import KubeObject, Slots
from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import DELETED
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterError,
    FilterPlugin,
    PodPredicate,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    Rejection,
    ReservePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodeselector import NodeSelector
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.kube.client import ApiError
from secondary_scheduler.plugins.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    DeviceID,
    Placement,
    SelectorResults,
    allocated_device_ids,
)
from secondary_scheduler.plugins.dynamicresources.claims import (
    DEVICE_CLASSES,
    FINALIZER,
    RESERVED_FOR_MAX_SIZE,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ClaimLookupError,
    HeldDevices,
    allocation_of,
    claim_key,
    is_reserved_for,
    metadata,
    pod_claims,
    reserved_for,
)
from secondary_scheduler.plugins.dynamicresources.explain import ClaimsView
from secondary_scheduler.plugins.dynamicresources.limitation import ENABLED_WARNING
from secondary_scheduler.plugins.dynamicresources.pools import SliceIndex, UnsupportedFeature

NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
"""Upstream's PostFilter answer for a pod whose claims it cannot free: part of every FailedScheduling text."""
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"

_STATE_KEY = "DynamicResources"
_BIND_ATTEMPTS = 5
"""client-go's retry.DefaultRetry steps, which upstream's bindClaim retries conflicts with."""


class DynamicResourcesFilterError(FilterError):
    """Upstream's statusError from Filter: the allocator could not judge the claims."""


@dataclass
class _CycleData:
    claims: list[KubeObject] = field(default_factory=list)
    available_on: list[NodeSelector | None] = field(default_factory=list)
    """Per claim: an allocated claim's node selector (None: any node, or not allocated)."""
    allocator: Allocator | None = None
    to_allocate: list[int] = field(default_factory=list)
    """Indices of the claims without an allocation."""
    placements: dict[str, Placement] = field(default_factory=dict)
    """Node -> where the claims fit on it (its AllocationResults are built for the chosen node)."""
    unavailable: set[int] = field(default_factory=set)
    """Claims whose allocation kept the pod off some node (PostFilter may free them)."""
    reserved: list[tuple[str, KubeObject]] = field(default_factory=list)
    """(claim UID, claim with its allocation) put in flight by Reserve."""
    cannot_allocate: list[KubeObject] = field(default_factory=list)
    """Nodes the allocator found no devices on (``score`` says why: ``explain``)."""


@dataclass(frozen=True)
class AllocationNote:
    """The devices the pod's unallocated claims would get on each node their Filter passed
    (what Reserve takes on the chosen one): ``secsched score`` prints it, one line per node."""

    plugin: str
    placements: dict[str, Placement]
    """Node -> where the claims fit on it (the cycle's own ``placements``)."""
    cannot_allocate: list[KubeObject]
    """The nodes Filter found the claims do not fit on (the cycle's own list)."""
    view: ClaimsView
    """What the allocator saw, to say why for each of those (only when the note is printed)."""

    @property
    def by_node(self) -> dict[str, list[dict[str, Any]]]:
        """Node -> one AllocationResult per claim."""
        return {node: placement.results() for node, placement in self.placements.items()}

    def requests_by_node(self) -> dict[str, list[list[str]]]:
        """Node -> per claim, the request of each device it gets, sorted (how many per request)."""
        return {
            node: [sorted(str(r.get("request")) for r in _device_results(result)) for result in results]
            for node, results in self.by_node.items()
        }

    def lines(self) -> list[str]:
        lines = []
        by_node = self.by_node
        keys = [claim_key(claim) for claim in self.view.allocator.claims]  # as the results are ordered
        for node in sorted(by_node):
            claims = (
                f"{claim}: "
                + ", ".join(
                    f"{r.get('request')}={r.get('driver')}/{r.get('pool')}/{r.get('device')}"
                    for r in _device_results(result)
                )
                for claim, result in zip(keys, by_node[node], strict=True)
            )
            lines.append(f"{node}: {'; '.join(claims)}")
        return lines + self.view.rejection_lines(self.cannot_allocate)


def _device_results(allocation: dict[str, Any]) -> list[dict[str, Any]]:
    return list((allocation.get("devices") or {}).get("results") or ())


class DynamicResources(
    PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, ReservePlugin, PreBindPlugin
):
    name: ClassVar[str] = "DynamicResources"
    enabled_warning: ClassVar[str | None] = ENABLED_WARNING

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.claims = handle.informer(RESOURCE_CLAIMS)
        self.classes = handle.informer(DEVICE_CLASSES)
        self.slices = handle.informer(RESOURCE_SLICES)
        self.selector_results = SelectorResults()
        self.slice_index = SliceIndex()
        """Each node's pools, kept across cycles until its slices change."""
        self.held_devices = HeldDevices()
        self.slices.add_listener(self._slice_changed)
        self.in_flight: dict[str, KubeObject] = {}
        """Claim UID -> the claim with the allocation a reserved pod will write (upstream's in-flight)."""

    def _slice_changed(self, action: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if action == DELETED and old is not None:
            self.selector_results.forget(str(metadata(old).get("name", "")))

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        update = ActionType.ADD | ActionType.UPDATE
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
                )
            ),
            ClusterEventWithHint(ClusterEvent(RESOURCE_CLAIMS.kind, update), self._claim_may_help),
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASSES.kind, update)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICES.kind, update)),
        )

    def _claim_may_help(self, pod: PodInfo, old: Any, new: Any) -> bool:
        """isSchedulableAfterClaimChange: a deallocation, or a status change of one of the pod's claims."""
        if new is None:
            return False
        try:
            uses = any(
                metadata(c).get("uid") == metadata(new).get("uid") for c in pod_claims(pod.obj, self.claims)
            )
        except ClaimLookupError:
            return False
        if old is not None and allocation_of(old) is not None and allocation_of(new) is None:
            return True
        if not uses:
            return False
        return old is None or old.get("status") != new.get("status")

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Upstream's PreEnqueue: a pod waits outside the queue (no attempt, no FailedScheduling)
        until each of its claims exists, is not being deleted, and (from a template) is its own;
        the claim's or the pod's status event lets it in."""
        if not (pod.obj.get("spec") or {}).get("resourceClaims"):
            return SUCCESS
        try:
            pod_claims(pod.obj, self.claims)
        except ClaimLookupError as error:
            return Status.unschedulable(str(error), unresolvable=True)
        return SUCCESS

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    # -- PreFilter ----------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        data = _CycleData()
        state.write(_STATE_KEY, data)
        if not (pod.obj.get("spec") or {}).get("resourceClaims"):
            return SKIP
        try:
            data.claims = pod_claims(pod.obj, self.claims)
        except ClaimLookupError as error:
            return Status.unschedulable(str(error), unresolvable=True)
        if not data.claims:
            return SKIP
        for index, claim in enumerate(data.claims):
            allocation = allocation_of(claim)
            if allocation is not None:
                if len(reserved_for(claim)) >= RESERVED_FOR_MAX_SIZE and not is_reserved_for(claim, pod.uid):
                    return Status.unschedulable("resourceclaim in use", unresolvable=True)
                selector = allocation.get("nodeSelector")
                data.available_on.append(NodeSelector.parse(selector) if selector else None)
                continue
            data.available_on.append(None)
            data.to_allocate.append(index)
            if str(metadata(claim).get("uid", "")) in self.in_flight:
                return Status.unschedulable(
                    f"resource claim {claim_key(claim)} is in the process of being allocated",
                    unresolvable=True,
                )
            problem = self._check_classes(claim)
            if problem is not None:
                return problem
        if data.to_allocate:
            try:
                data.allocator = Allocator(
                    [data.claims[index] for index in data.to_allocate],
                    lambda name: self.classes.get(name),
                    self.slices.list(),
                    self._devices_in_use(),
                    self.selector_results,
                    self.slice_index,
                )
            except UnsupportedFeature as error:
                return Status.unschedulable(str(error), unresolvable=True)
            view = ClaimsView(data.allocator)
            state.add_note(AllocationNote(self.name, data.placements, data.cannot_allocate, view))
        return SUCCESS

    def _check_classes(self, claim: KubeObject) -> Status | None:
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            name = str(request.get("name", ""))
            if request.get("exactly"):
                named = [(name, request["exactly"])]
            elif request.get("firstAvailable"):
                named = [(f"{name}/{sub.get('name', '')}", sub) for sub in request["firstAvailable"]]
            else:
                return Status.unschedulable(
                    f"resource claim {claim_key(claim)}, request {name}: unknown request type",
                    unresolvable=True,
                )
            for qualified, spec in named:
                class_name = spec.get("deviceClassName")
                if not class_name:
                    return Status.error(f"request {qualified}: unsupported request type")
                if self.classes.get(str(class_name)) is None:
                    return Status.unschedulable(
                        f"request {qualified}: device class {class_name} does not exist", unresolvable=True
                    )
        return None

    def _devices_in_use(self) -> set[DeviceID]:
        devices = self.held_devices.of(self.claims)
        for claim in self.in_flight.values():
            devices.update(allocated_device_ids(claim))
        return devices

    # -- Filter -------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        data = state.read(_STATE_KEY, _CycleData)
        if data is None:
            raise DynamicResourcesFilterError(f'running "{self.name}" filter plugin: no PreFilter state')
        cannot = np.zeros(len(candidates), dtype=np.bool_)
        unavailable = np.zeros(len(candidates), dtype=np.bool_)
        for position, slot in enumerate(candidates.tolist()):
            node = table.objects[slot]
            if node is None:
                continue
            placement = None
            if data.allocator is not None:
                try:
                    placement = data.allocator.place(node)
                except AllocationError as error:
                    raise DynamicResourcesFilterError(
                        f'running "{self.name}" filter plugin: {error}'
                    ) from error
                if placement is None:
                    cannot[position] = True
                    data.cannot_allocate.append(node)
                    continue
            missing = [
                index
                for index, selector in enumerate(data.available_on)
                if selector is not None and not selector.matches(node)
            ]
            if missing:
                data.unavailable.update(missing)
                unavailable[position] = True
                continue
            if placement is not None:
                data.placements[table.names[slot]] = placement
        return [
            Rejection(cannot, CANNOT_ALLOCATE, unresolvable=True),
            Rejection(unavailable, NOT_AVAILABLE, unresolvable=True),
        ]

    # -- PostFilter ---------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        """Free an allocated claim that keeps the pod off the nodes, if no other pod uses it."""
        data = state.read(_STATE_KEY, _CycleData)
        if data is None or not data.claims:
            return PostFilterResult(Status.unschedulable(NO_CLAIMS_TO_DEALLOCATE))
        for index in sorted(data.unavailable):
            claim = data.claims[index]
            consumers = reserved_for(claim)
            if not consumers or (len(consumers) == 1 and consumers[0].get("uid") == pod.uid):
                if self.handle.client is not None:  # in memory (`secsched score`) nothing is written
                    self.handle.spawn(self._deallocate(claim), name=f"deallocate-{claim_key(claim)}")
                return PostFilterResult(Status.unschedulable("deallocation of ResourceClaim completed"))
        return PostFilterResult(Status.unschedulable("still not schedulable"))

    async def _deallocate(self, claim: KubeObject) -> None:
        client = self.handle.client
        if client is None:
            return
        body = copy.deepcopy(dict(claim))
        status = dict(body.get("status") or {})
        for key in ("reservedFor", "allocation", "devices"):
            status.pop(key, None)
        body["status"] = status
        await client.replace(_claim_path(claim) + "/status", body)

    # -- Reserve / Unreserve ------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data = state.read(_STATE_KEY, _CycleData)
        if data is None:
            return Status.error(f'reading "{_STATE_KEY}" from cycle state: not found')
        if data.allocator is None:
            return SUCCESS
        placement = data.placements.get(node_name)
        if placement is None:
            return Status.error("claim allocation not found for node")
        results = placement.results()
        if len(results) != len(data.to_allocate):
            return Status.error(
                f"internal error, have {len(results)} allocations, {len(data.to_allocate)} claims to allocate"
            )
        for index, allocation in zip(data.to_allocate, results, strict=True):
            claim = copy.deepcopy(dict(data.claims[index]))
            claim["status"] = {**(claim.get("status") or {}), "allocation": allocation}
            uid = str(metadata(claim).get("uid", ""))
            self.in_flight[uid] = claim
            data.reserved.append((uid, claim))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = state.read(_STATE_KEY, _CycleData)
        if data is None or not data.claims:
            return
        for uid, _ in data.reserved:
            self.in_flight.pop(uid, None)
        data.reserved.clear()
        for claim in data.claims:
            current = self.claims.get(
                str(metadata(claim).get("name", "")), str(metadata(claim).get("namespace", ""))
            )
            if (
                current is not None
                and allocation_of(current) is not None
                and is_reserved_for(current, pod.uid)
            ):
                self.handle.spawn(
                    self._unreserve_claim(current, pod.uid), name=f"unreserve-{claim_key(current)}"
                )

    async def _unreserve_claim(self, claim: KubeObject, pod_uid: str) -> None:
        client = self.handle.client
        if client is None:
            return
        patch = {
            "metadata": {"uid": metadata(claim).get("uid")},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]},
        }
        await client.patch(_claim_path(claim) + "/status", patch, patch_type="strategic")

    # -- PreBind ------------------------------------------------------------------------------
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data = state.read(_STATE_KEY, _CycleData)
        if data is None:
            return Status.error(f'reading "{_STATE_KEY}" from cycle state: not found')
        if not data.claims:
            return SUCCESS
        allocations = {uid: allocation_of(claim) for uid, claim in data.reserved}
        client = self.handle.client
        for index, claim in enumerate(data.claims):
            if is_reserved_for(claim, pod.uid):
                continue
            uid = str(metadata(claim).get("uid", ""))
            if client is None:
                return Status.error("binding resource claims: no API client (scheduling in memory)")
            try:
                written = await self._bind_claim(client, claim, allocations.get(uid), pod)
            except (ApiError, _BindError) as error:
                self.in_flight.pop(uid, None)
                return Status.error(str(error))
            self.claims.assume(written)
            self.in_flight.pop(uid, None)
            data.claims[index] = written
        return SUCCESS

    async def _bind_claim(self, client: Any, claim: KubeObject, allocation: Any, pod: PodInfo) -> KubeObject:
        """Upstream's bindClaim: finalizer, allocation, reservation; the claim is re-read after a conflict."""
        current: dict[str, Any] = copy.deepcopy(dict(claim))
        what = "add allocation and reservation to" if allocation is not None else "add reservation to"
        for attempt in range(_BIND_ATTEMPTS):
            if attempt > 0:
                try:
                    current = await client.get(_claim_path(claim))
                except ApiError as error:
                    raise _BindError(
                        f"get updated claim {claim_key(claim)} after conflict: {error}"
                    ) from error
            if metadata(current).get("deletionTimestamp"):
                raise _BindError(f"claim {claim_key(claim)} got deleted in the meantime")
            try:
                if allocation is not None:
                    if allocation_of(current) is not None:
                        raise _BindError(f"claim {claim_key(claim)} got allocated elsewhere in the meantime")
                    finalizers = list(metadata(current).get("finalizers") or ())
                    if FINALIZER not in finalizers:
                        current["metadata"] = {**metadata(current), "finalizers": [*finalizers, FINALIZER]}
                        try:
                            current = await client.replace(_claim_path(claim), current)
                        except ApiError as error:
                            if error.conflict:
                                raise
                            raise _BindError(f"add finalizer to claim {claim_key(claim)}: {error}") from error
                status = dict(current.get("status") or {})
                if allocation is not None:
                    status["allocation"] = allocation
                status["reservedFor"] = [
                    *(status.get("reservedFor") or ()),
                    {"resource": "pods", "name": pod.name, "uid": pod.uid},
                ]
                current["status"] = status
                written: KubeObject = await client.replace(_claim_path(claim) + "/status", current)
                return written
            except ApiError as error:
                if error.conflict and attempt + 1 < _BIND_ATTEMPTS:
                    continue
                raise _BindError(f"{what} claim {claim_key(claim)}: {error}") from error
        raise _BindError(f"{what} claim {claim_key(claim)}: too many conflicts")  # pragma: no cover


class _BindError(Exception):
    """PreBind could not write a claim (upstream's bindClaim error)."""


def _claim_path(claim: KubeObject) -> str:
    meta = metadata(claim)
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
