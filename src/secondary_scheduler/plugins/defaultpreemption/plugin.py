"""The DefaultPreemption PostFilter plugin (pkg/scheduler/framework/plugins/defaultpreemption).

The plugin decides what kube-scheduler's DefaultPreemption decides; the shared
``framework.preemption.Evaluator`` runs the search and the evictions:

- who may preempt: not a pod with ``preemptionPolicy: Never``, nor one whose earlier
  victims on its nominated node are still terminating (unless that node is now ruled out
  for reasons preemption cannot fix);
- who may be a victim: pods of strictly lower priority;
- the victims on a node (``select_victims_on_node``): remove every possible victim; if the
  pod then fits, put them back one by one, most important first, those whose eviction
  would break a PodDisruptionBudget before the others, keeping each one the pod still
  fits with. Whoever cannot be put back is a victim.

Its PostFilter messages are kube-scheduler's, prefixed "preemption: ". A successful
preemption nominates the pod to the node (``status.nominatedNodeName``); the pod goes back
to the queue and is bound there once its victims are gone.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    CycleState,
    PodPredicate,
    PostFilterPlugin,
    PostFilterResult,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.preemption import (
    Budget,
    Candidate,
    Evaluator,
    default_offset,
    importance,
    split_by_pdb_violation,
    terminating_by_preemption,
)
from secondary_scheduler.framework.status import SUCCESS, Code, Status
from secondary_scheduler.plugins.defaultpreemption.args import DefaultPreemptionArgs

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
PREEMPT_NEVER = "Never"
_PRE_FILTER_PASSED = "DefaultPreemption/preFilterPassed"


@dataclass(frozen=True)
class PreemptionNote:
    """What preemption decided in one cycle, for ``secsched score`` to print."""

    plugin: str
    message: str
    candidate: Candidate | None

    def lines(self) -> list[str]:
        if self.candidate is None:
            return [f"no preemption: {self.message}"]
        victims = ", ".join(f"{victim.key} (priority {victim.priority})" for victim in self.candidate.victims)
        lines = [f"nominated to {self.candidate.node}; victims: {victims}"]
        if self.candidate.pdb_violations:
            lines.append(f"PodDisruptionBudgets violated: {self.candidate.pdb_violations}")
        return lines


class DefaultPreemption(PostFilterPlugin):
    name: ClassVar[str] = "DefaultPreemption"
    args_model = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args if args is not None else DefaultPreemptionArgs.model_validate({})
        self.rng = random.Random()
        """Where each dry run starts among the potential nodes (replace it to make tests repeatable)."""
        self.evaluator = Evaluator(self.name, handle, self)
        self._reads: dict[str, PodPredicate] = {}
        """Pod UID -> which pods its PreFilter reads, while its dry run lasts."""
        if handle.framework is not None:
            handle.nominator.watch(handle, handle.framework.scheduler_name)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # PostFilter never rejects a pod itself: the filters' plugins own its requeueing.
        return ()

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        # A PreFilter rejection leaves the cycle's state unfinished: the dry run cannot reuse it.
        state.write(_PRE_FILTER_PASSED, not diagnosis.pre_filter_message)
        try:
            preemption = self.evaluator.preempt(state, pod, table, diagnosis)
        finally:
            self._reads.pop(pod.uid, None)
        if preemption.nominated_node is not None:
            self.evaluator.nominate(pod, preemption.nominated_node)
        status = preemption.status
        state.add_note(PreemptionNote(self.name, status.message, preemption.candidate))
        if status.is_success:
            return PostFilterResult(SUCCESS, preemption.nominated_node or "")
        if status.message:
            status = Status(status.code, (f"preemption: {status.message}",))
        return PostFilterResult(status)

    # -- preemption.PreemptionInterface ---------------------------------------------------------
    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return default_offset(self.rng, num_nodes), self.args.num_candidates(num_nodes)

    def eligible_to_preempt_others(
        self, pod: PodInfo, table: NodeTable, nominated_node_status: Status
    ) -> tuple[bool, str]:
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER
        nominated = self.handle.nominator.node_of(pod.uid)
        if nominated:
            # The nominated node is out of reach now: preempting elsewhere may help.
            if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            slot = table.slot_of(nominated)
            if slot is not None:
                for other in table.pods[slot].values():
                    if self.may_preempt(other, pod) and terminating_by_preemption(other):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def may_preempt(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        """Whether ``preemptor`` may evict ``victim``: only pods of lower priority (isPreemptionAllowed)."""
        return victim.priority < preemptor.priority

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, table: NodeTable, slot: int, budgets: Sequence[Budget]
    ) -> tuple[list[PodInfo], int, Status]:
        framework = self.handle.framework
        if framework is None:
            return [], 0, Status.error(f"{self.name}: the handle is not bound to a profile")
        node = table.names[slot]
        potential = [other for other in table.pods[slot].values() if self.may_preempt(other, pod)]
        if not potential:
            return [], 0, Status.unschedulable(NO_VICTIMS, unresolvable=True)
        # The cycle's PreFilter output holds as long as no pod PreFilter reads is off the table.
        reads = self._reads.get(pod.uid)
        if reads is None:  # once per preemption: the dry run asks for every node
            reads = self._reads[pod.uid] = framework.pre_filter_reads(pod)
        read = {other.key for other in potential if reads(other)}
        base = state if state.read(_PRE_FILTER_PASSED, bool) else None
        removed_read = 0

        def fits() -> bool:
            current = base if removed_read == 0 else None
            return framework.run_filters_with_nominated_pods(pod, table, slot, current, reads).is_success

        try:
            for other in potential:
                table.remove_pod(other.key)
            removed_read = len(read)
            current = base if removed_read == 0 else None
            status = framework.run_filters_with_nominated_pods(pod, table, slot, current, reads)
            if not status.is_success:
                return [], 0, status
            now = self.handle.wall_clock()
            potential.sort(key=lambda other: importance(other, now))
            violating, non_violating = split_by_pdb_violation(potential, budgets)
            victims: list[PodInfo] = []
            last = (non_violating or violating)[-1]

            def reprieve(other: PodInfo) -> bool:
                """Put ``other`` back if the pod still fits with it; else it is a victim."""
                nonlocal removed_read
                if other is last and not victims:
                    # Every other pod is back: with this one too the node is as it was when this
                    # cycle's filters rejected it, so it stays a victim (no need to filter again).
                    victims.append(other)
                    return False
                table.add_pod(other, node)
                removed_read -= other.key in read
                if fits():
                    return True
                table.remove_pod(other.key)
                removed_read += other.key in read
                victims.append(other)
                return False

            violations = sum(not reprieve(other) for other in violating)
            for other in non_violating:
                reprieve(other)
            if violating and non_violating:
                victims.sort(key=lambda other: importance(other, now))
            return victims, violations, SUCCESS
        finally:
            for other in potential:
                if table.node_of_pod(other.key) is None:
                    table.add_pod(other, node)
