"""The DefaultPreemption PostFilter and PreEnqueue plugin (pkg/scheduler/framework/plugins/defaultpreemption).

The plugin decides what kube-scheduler's DefaultPreemption decides; the shared
``framework.preemption.Evaluator`` runs the search and the evictions:

- who may preempt: not a pod with ``preemptionPolicy: Never``, nor one whose earlier
  victims on its nominated node are still terminating (unless that node is now ruled out
  for reasons preemption cannot fix); a victim counts as terminating as soon as this
  scheduler has sent its eviction, before the watch shows it (``Evaluator.being_evicted``);
- who may be a victim: pods of strictly lower priority;
- the victims on a node (``select_victims_on_nodes``): remove every possible victim; if the
  pod then fits, put them back one by one, most important first, those whose eviction
  would break a PodDisruptionBudget before the others, keeping each one the pod still
  fits with. Whoever cannot be put back is a victim.

Its PostFilter messages are kube-scheduler's, prefixed "preemption: ". A successful
preemption nominates the pod to the node (``status.nominatedNodeName``); the victims are
evicted in the background (kube-scheduler 1.34's async preemption), PreEnqueue keeps the pod
out of the queue until that is done, and it is bound there once its victims are gone.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    CycleState,
    PodPredicate,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.nominated_filter import (
    run_filters_on_nodes,
    run_filters_with_nominated_pods,
)
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.podmoves import PodMoves
from secondary_scheduler.framework.preemption import (
    WAITING_FOR_PREEMPTION,
    Budget,
    Candidate,
    Evaluator,
    Victims,
    default_offset,
    importance,
    split_by_pdb_violation,
    terminating_by_preemption,
)
from secondary_scheduler.framework.status import SUCCESS, Code, Status
from secondary_scheduler.plugins.defaultpreemption.args import DefaultPreemptionArgs

if TYPE_CHECKING:
    from secondary_scheduler.framework.runtime import Framework

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
PREEMPT_NEVER = "Never"
PRE_FILTER_PASSED = "DefaultPreemption/preFilterPassed"
"""CycleState key: whether this cycle's PreFilter output is whole (the dry run may reuse it)."""
_NO_VICTIMS = Victims((), 0, Status.unschedulable(NO_VICTIMS, unresolvable=True))
"""The answer for every node without a pod of lower priority (shared: nothing changes it)."""


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


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin):
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

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # PostFilter never rejects a pod itself, and a pod kept out by PreEnqueue is let back
        # in by the end of its evictions or their deletion events: the filters' plugins own
        # its requeueing (upstream registers pod deletions with a hint that always skips).
        return ()

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Keep the pod out of the queue while its victims are being evicted (async preemption)."""
        if self.evaluator.is_preempting(pod.uid):
            return Status.unschedulable(WAITING_FOR_PREEMPTION, unresolvable=True)
        return SUCCESS

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        # A PreFilter rejection leaves the cycle's state unfinished: the dry run cannot reuse it.
        state.write(PRE_FILTER_PASSED, not diagnosis.pre_filter_message)
        try:
            preemption = self.evaluator.preempt(state, pod, table, diagnosis)
        finally:
            self._reads.pop(pod.uid, None)
        status = preemption.status
        state.add_note(PreemptionNote(self.name, status.message, preemption.candidate))
        if status.is_success:
            return PostFilterResult(SUCCESS, preemption.nominated_node)
        if status.message:
            status = Status(status.code, (f"preemption: {status.message}",))
        return PostFilterResult(status, preemption.nominated_node)

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
                for other in self.preemptible(table.pods[slot].values(), pod):
                    if terminating_by_preemption(other) or self.evaluator.being_evicted(other.uid):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def preemptible(self, pods: Iterable[PodInfo], preemptor: PodInfo) -> list[PodInfo]:
        """The ``pods`` that ``preemptor`` may evict: only pods of lower priority (isPreemptionAllowed).

        Asked of every pod on hundreds of nodes per dry run, so it takes them all at once.
        """
        priority = preemptor.priority
        return [victim for victim in pods if victim.priority < priority]

    def select_victims_on_nodes(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        slots: Sequence[int],
        budgets: Sequence[Budget],
    ) -> list[Victims]:
        framework = self.handle.framework
        if framework is None:
            error = Victims([], 0, Status.error(f"{self.name}: the handle is not bound to a profile"))
            return [error] * len(slots)
        reads = self._reads.get(pod.uid)
        if reads is None:  # once per preemption: the dry run asks in several chunks
            reads = self._reads[pod.uid] = framework.pre_filter_reads(pod)
        # The cycle's PreFilter output holds while no pod PreFilter reads is off the table.
        base = state if state.read(PRE_FILTER_PASSED, bool) else None
        results: dict[int, Victims] = {}
        together: dict[int, list[PodInfo]] = {}
        check_reads = reads is not reads_no_pod
        for slot in slots:
            potential = self.preemptible(table.pods[slot].values(), pod)
            if not potential:
                results[slot] = _NO_VICTIMS
            elif base is not None and not (check_reads and any(map(reads, potential))):
                together[slot] = potential
            else:
                results[slot] = self._select_on_node(
                    framework, base, pod, table, slot, potential, reads, budgets
                )
        if base is not None and together:
            with PodMoves(table, totals_only=framework.filters_read_totals_only(base)) as moves:
                results.update(self._select_together(framework, base, pod, moves, together, reads, budgets))
        return [results[slot] for slot in slots]

    def _select_on_node(
        self,
        framework: Framework,
        base: CycleState | None,
        pod: PodInfo,
        table: NodeTable,
        slot: int,
        potential: list[PodInfo],
        reads: PodPredicate,
        budgets: Sequence[Budget],
    ) -> Victims:
        """One node's victims, filtering after each move (PreFilter again while a pod it reads is off)."""
        read = {other.key for other in potential if reads(other)}
        removed_read = 0

        def fits() -> bool:
            current = base if removed_read == 0 else None
            return run_filters_with_nominated_pods(framework, pod, table, slot, current, reads).is_success

        with PodMoves(table, totals_only=False) as moves:
            moves.remove((slot, other) for other in potential)
            removed_read = len(read)
            current = base if removed_read == 0 else None
            status = run_filters_with_nominated_pods(framework, pod, table, slot, current, reads)
            if not status.is_success:
                return Victims([], 0, status)
            plan = _Reprieve.of(potential, budgets, self.handle.wall_clock())
            for other in plan.order:
                if plan.settled_without_filtering(other):
                    continue
                moves.add([(slot, other)])
                removed_read -= other.key in read
                if not fits():
                    moves.remove([(slot, other)])
                    removed_read += other.key in read
                    plan.victims.append(other)
            return plan.result()

    def _select_together(
        self,
        framework: Framework,
        base: CycleState,
        pod: PodInfo,
        moves: PodMoves,
        potential_by_slot: dict[int, list[PodInfo]],
        reads: PodPredicate,
        budgets: Sequence[Budget],
    ) -> dict[int, Victims]:
        """The victims on many nodes whose possible victims PreFilter does not read, found together.

        The same steps as ``_select_on_node``, each one taken on every node at once: all possible
        victims off, one filter pass; then round by round each node puts back its next pod and
        one pass over those nodes decides who stays. A node's filters see only its own pods, and
        PreFilter's output holds throughout (it reads none of the pods moved). The caller undoes
        the ``moves``.
        """
        table = moves.table
        results: dict[int, Victims] = {}
        node_pods = table.pods
        whole: list[int] = []  # the usual case: every pod on the node is a possible victim
        some: list[tuple[int, PodInfo]] = []
        for slot, potential in potential_by_slot.items():
            if len(potential) == len(node_pods[slot]):
                whole.append(slot)
            else:
                some += ((slot, other) for other in potential)
        moves.remove_all(whole)
        moves.remove(some)
        rejected = run_filters_on_nodes(framework, pod, table, list(potential_by_slot), base, reads)
        for slot, status in rejected.items():
            results[slot] = Victims([], 0, status)
        now = self.handle.wall_clock()
        plans: dict[int, _Reprieve] = {}
        for slot, potential in potential_by_slot.items():
            if slot in rejected:
                continue
            if len(potential) == 1:  # the node did not fit with its one pod: that pod is the victim
                violating = split_by_pdb_violation(potential, budgets)[0] if budgets else ()
                results[slot] = Victims(potential, len(violating), SUCCESS)
            else:
                plans[slot] = _Reprieve.of(potential, budgets, now)
        step = 0
        while plans:
            trying: dict[int, PodInfo] = {}
            for slot, plan in list(plans.items()):
                if step == len(plan.order):
                    results[slot] = plan.result()
                    del plans[slot]
                    continue
                other = plan.order[step]
                if not plan.settled_without_filtering(other):
                    trying[slot] = other
            if trying:
                moves.add(trying.items())
                rejected = run_filters_on_nodes(framework, pod, table, list(trying), base, reads)
                moves.remove((slot, trying[slot]) for slot in rejected)
                for slot in rejected:
                    plans[slot].victims.append(trying[slot])
            step += 1
        return results


@dataclass
class _Reprieve:
    """One node's possible victims in the order they are put back, and who could not be.

    Most important first, those whose eviction would break a PodDisruptionBudget before the
    others; each stays if the pod still fits with it, else it is a victim.
    """

    order: list[PodInfo]
    violating: int
    """How many of ``order``, from its start, would break a budget if evicted."""
    now: float
    victims: list[PodInfo] = field(default_factory=list)

    @classmethod
    def of(cls, potential: list[PodInfo], budgets: Sequence[Budget], now: float) -> _Reprieve:
        if len(potential) > 1:
            potential = sorted(potential, key=lambda other: importance(other, now))
        violating, non_violating = split_by_pdb_violation(potential, budgets)
        return cls(violating + non_violating, len(violating), now)

    def settled_without_filtering(self, other: PodInfo) -> bool:
        """The last pod with no victim yet: with it back the node is as this cycle's filters
        rejected it, so it is a victim without filtering again."""
        if other is self.order[-1] and not self.victims:
            self.victims.append(other)
            return True
        return False

    def result(self) -> Victims:
        if self.violating in (0, len(self.order)):  # none or all of the victims break a budget
            violations = len(self.victims) if self.violating else 0
        else:
            violating = set(map(id, self.order[: self.violating]))
            violations = sum(id(victim) in violating for victim in self.victims)
        victims = self.victims
        if 0 < self.violating < len(self.order):
            victims = sorted(victims, key=lambda other: importance(other, self.now))
        return Victims(victims, violations, SUCCESS)
