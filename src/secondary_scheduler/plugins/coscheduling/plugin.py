"""The Coscheduling plugin (scheduler-plugins v0.34.7 ``pkg/coscheduling``): gang scheduling.

Pods labelled ``scheduling.x-k8s.io/pod-group: NAME`` form a gang with the PodGroup NAME
of their namespace. Nothing of a gang is bound until ``minMember`` of its pods have a node:

- QueueSort keeps a gang's pods together: by priority, then by the gang's time (its
  PodGroup's creation, or its last failure, so a failing gang steps behind the others),
  then by ``namespace/name``;
- PreFilter refuses a pod whose gang failed lately (``podGroupBackoffSeconds``), has fewer
  pods than ``minMember`` (or too many of them gated), or whose ``minResources`` the
  cluster's free room cannot cover; as UnschedulableAndUnresolvable (no preemption);
- Permit holds each placed pod (Wait) until ``minMember`` are assigned, for the PodGroup's
  ``scheduleTimeoutSeconds`` or ``permitWaitingTimeSeconds``; the pod that completes the
  gang allows all the waiting ones. The gang's first placed pod moves its siblings to
  the active queue (``handle.activate``) so the gang is tried back to back;
- PostFilter, when a pod fits nowhere and too much of the gang is unplaced
  (``podGroupRejectPercentage``), rejects the gang's waiting pods (their room is given back)
  and may back the gang off; Unreserve does the same when one member fails later;
- a gang is retried when a pod is bound (room may have changed hands) or a PodGroup is
  added or updated.

A gang that cannot fit, and the late Unreserve
----------------------------------------------
With upstream's default ``podGroupBackoffSeconds: 0`` such a gang goes round: its members
are placed and wait, one fits nowhere, PostFilter rejects the waiting ones; a member still
to be tried (activated, or requeued by the room the rejected ones gave back) then fits,
and being the gang's first assigned pod it activates its siblings again. In kube-scheduler
the rejected pods' failures are handled by their binding goroutines (Unreserve, then the
room is forgotten and the pod requeued), which in practice run a few milliseconds after
the scheduling goroutine has moved on. So after a short burst of such rounds the typical
end is: a member fits on room one rejected pod gave back while another rejected pod's
Unreserve has not run yet; it is not the first assigned (the late pod is still counted),
so it activates nobody and waits; then that late Unreserve rejects every waiting pod of
the gang, these too end rejected by Coscheduling (which only a Pod add or a PodGroup
change brings back), and the gang holds nothing until such an event.

Here binding tasks run before the next cycle, so that race never happens and the rounds
would go on for ever. The plugin models its usual outcome deterministically: when a pod
that Coscheduling rejected at Permit is unreserved (its binding cycle failed), the pod
leaves the gang's assigned pods at once, but the rest of that Unreserve (rejecting the
gang's waiting pods, forgetting the gang's minResources check, marking its failure) runs
*late*, once the scheduling loop has no pod left to try (``handle.when_idle``). While a
late Unreserve is pending, the gang's first placed pod does not activate its siblings (in
upstream the late pod is still among the assigned, so it is not the first). The pods
still to be tried are tried, wait, and are rejected by the late Unreserve; the gang then
holds nothing. Unlike the race, the assigned count stays exact (the late pod is not
counted), so a pending late Unreserve never makes a partial gang reach ``minMember``.
A pod rejected otherwise (a Permit timeout, a failed bind) is unreserved at once.

The PodGroups' status is kept by ``status.PodGroupStatusController``, a service this
plugin registers when it runs against a cluster (upstream runs it in its own controller
binary; see that module).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    CycleState,
    PermitPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SUCCESS, Code, Status
from secondary_scheduler.plugins.coscheduling.args import CoschedulingArgs
from secondary_scheduler.plugins.coscheduling.manager import PermitOutcome, PodGroupError, PodGroupManager
from secondary_scheduler.plugins.coscheduling.notes import add_line
from secondary_scheduler.plugins.coscheduling.podgroup import PODGROUPS, PodGroup, group_label
from secondary_scheduler.plugins.coscheduling.status import PodGroupStatusController

DEFAULT_WAIT_SECONDS = 60.0
"""util.DefaultWaitTime: the wait when neither the PodGroup nor the args set one."""
OPTIMISTIC_REJECTION = "optimistic rejection in PostFilter"
UNRESERVE_REJECTION = "rejection in Unreserve"


class Coscheduling(QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, PermitPlugin, ReservePlugin):
    name: ClassVar[str] = "Coscheduling"
    args_model = CoschedulingArgs

    def __init__(self, args: CoschedulingArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args if args is not None else CoschedulingArgs()
        self.manager = PodGroupManager(
            handle.informer(PODGROUPS),
            permit_timeout=float(self.args.permit_waiting_time_seconds),
            clock=handle.clock,
            wall_clock=handle.wall_clock,
        )
        handle.watch_pods(self.manager)
        self.reject_threshold = self.args.pod_group_reject_percentage / 100.0
        self._rejected_at_permit: set[str] = set()
        """UIDs of the pods this plugin rejected while they waited at Permit (their Unreserve is late)."""
        self._late: dict[str, int] = {}
        """Gang -> its late Unreserves still pending (see the module's docstring)."""
        # Queue entries carry monotonic times; PodGroups carry wall-clock ones. One fixed
        # offset keeps the comparison stable for the queue's heap.
        self._wall_offset = handle.wall_clock() - handle.clock()
        if handle.client is not None:
            PodGroupStatusController.of(handle)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(PODGROUPS.kind, ActionType.ADD | ActionType.UPDATE)),
        )

    # -- QueueSort -----------------------------------------------------------------------------
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        time_a = self.manager.creation_timestamp(a.pod, self._initial_attempt(a))
        time_b = self.manager.creation_timestamp(b.pod, self._initial_attempt(b))
        if time_a == time_b:
            return a.pod.key < b.pod.key
        return time_a < time_b

    def _initial_attempt(self, info: QueuedPodInfo) -> float:
        """When the pod first entered the queue, in wall-clock seconds."""
        initial = getattr(info, "initial_timestamp", None)
        monotonic = initial if isinstance(initial, float) else info.timestamp
        return monotonic + self._wall_offset

    # -- PreFilter -----------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        try:
            reason = self.manager.pre_filter(pod, table, self._snapshot_members(pod, table))
        except PodGroupError as error:
            return Status.error(str(error))
        if reason is None:
            return SUCCESS
        add_line(state, self.name, f"PreFilter rejects the pod: {reason}")
        return Status.unschedulable(reason, unresolvable=True)

    def _snapshot_members(self, pod: PodInfo, table: NodeTable) -> list[PodInfo]:
        """Under ``secsched score`` there is no pod watch: the gang is the snapshot's pods and this one."""
        group = group_label(pod.labels)
        if self.handle.snapshot is None or not group:
            return []
        members = [
            other
            for other, _slot in table.pods_in_namespace(pod.namespace)
            if group_label(other.labels) == group
        ]
        return [*members, pod]

    # -- PostFilter ----------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        try:
            gang, pg = self.manager.get_pod_group(pod)
        except PodGroupError as error:
            return PostFilterResult(Status.error(str(error)))
        if pg is None:
            return PostFilterResult(Status.unschedulable("can not find pod group"))
        assigned = self.manager.assigned_count(gang)
        if assigned >= pg.min_member:
            add_line(
                state,
                self.name,
                f"PostFilter: {assigned} of minMember {pg.min_member} already assigned: the gang stays",
            )
            return PostFilterResult(Status(Code.UNSCHEDULABLE))
        unassigned = (pg.min_member - assigned) / pg.min_member
        if unassigned <= self.reject_threshold:
            add_line(
                state,
                self.name,
                f"PostFilter: {pg.min_member - assigned} of minMember {pg.min_member} unassigned, within "
                f"podGroupRejectPercentage {self.args.pod_group_reject_percentage}%: the gang stays",
            )
            return PostFilterResult(Status(Code.UNSCHEDULABLE))
        rejected = self._reject_waiting(pod.namespace, pg.name, OPTIMISTIC_REJECTION)
        backoff = self.args.pod_group_backoff_seconds
        if backoff > 0 and len(self._members(pod, table)) >= pg.min_member:
            self.manager.backoff(gang, backoff)
        self.manager.permitted.discard(gang)
        self.manager.mark_failure(gang)
        message = (
            f"PodGroup {gang} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        )
        add_line(
            state,
            self.name,
            f"PostFilter rejects the gang: {assigned} of minMember {pg.min_member} assigned; "
            f"{rejected} waiting pod(s) rejected"
            + (f"; backed off {backoff}s" if gang in self.manager.backed_off else ""),
        )
        return PostFilterResult(Status.unschedulable(message))

    def _members(self, pod: PodInfo, table: NodeTable) -> list[PodInfo]:
        gang = f"{pod.namespace}/{group_label(pod.labels)}"
        members = {member.key: member for member in self.manager.pods_of(gang)}
        for member in self._snapshot_members(pod, table):
            members.setdefault(member.key, member)
        return list(members.values())

    def _reject_waiting(self, namespace: str, group: str, message: str) -> int:
        """Reject the gang's pods held at Permit: each is unreserved and its room given back."""
        rejected = 0
        for waiting in self.handle.waiting_pods:
            if waiting.pod.namespace == namespace and group_label(waiting.pod.labels) == group:
                if waiting.reject(self.name, message):
                    self._rejected_at_permit.add(waiting.pod.uid)
                rejected += 1
        return rejected

    # -- Permit --------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        try:
            outcome, first = self.manager.permit(pod)
            gang, pg = self.manager.get_pod_group(pod)
        except PodGroupError as error:
            return Status.error(str(error)), 0.0
        if outcome is PermitOutcome.NOT_SPECIFIED:
            return SUCCESS, 0.0
        if outcome is PermitOutcome.NOT_FOUND or pg is None:
            return Status.unschedulable(PermitOutcome.NOT_FOUND.value), 0.0
        if outcome is PermitOutcome.SUCCESS:
            self.manager.clear_failure(gang)
            for waiting in self.handle.waiting_pods:
                if f"{waiting.pod.namespace}/{group_label(waiting.pod.labels)}" == gang:
                    waiting.allow(self.name)
            return SUCCESS, 0.0
        if first and not self._late.get(gang):
            siblings = [member for member in self.manager.pods_of(gang) if member.uid != pod.uid]
            if siblings:
                self.handle.activate(siblings)
        return Status(Code.WAIT), self._wait_seconds(pg)

    def _wait_seconds(self, pg: PodGroup) -> float:
        """The PodGroup's scheduleTimeoutSeconds, else permitWaitingTimeSeconds, else 60 s (as upstream)."""
        configured = float(self.args.permit_waiting_time_seconds)
        if pg.schedule_timeout_seconds is not None:
            wait = float(pg.schedule_timeout_seconds)
        else:
            wait = configured if configured != 0 else DEFAULT_WAIT_SECONDS
        return wait if wait != 0 else configured

    # -- Reserve -------------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """One member failed after it was placed: the gang's other waiting pods give back their room too.

        For a pod this plugin rejected at Permit, all but the bookkeeping is late (see the
        module's docstring): it runs once the scheduling loop has caught up.
        """
        try:
            gang, pg = self.manager.get_pod_group(pod)
        except PodGroupError:
            gang, pg = "", None
        if pg is None:
            return
        self.manager.unreserve(pod)
        if pod.uid not in self._rejected_at_permit:
            self._unreserve_gang(gang, pod.namespace, pg.name)
            return
        self._rejected_at_permit.discard(pod.uid)
        self._late[gang] = self._late.get(gang, 0) + 1
        namespace, group = pod.namespace, pg.name

        def late() -> None:
            pending = self._late.get(gang, 0) - 1
            if pending > 0:
                self._late[gang] = pending
            else:
                self._late.pop(gang, None)
            self._unreserve_gang(gang, namespace, group)

        self.handle.when_idle(late)

    def _unreserve_gang(self, gang: str, namespace: str, group: str) -> None:
        """Upstream's Unreserve after ``pgMgr.Unreserve``: reject the waiting pods, forget the checks."""
        self._reject_waiting(namespace, group, UNRESERVE_REJECTION)
        self.manager.permitted.discard(gang)
        self.manager.mark_failure(gang)
