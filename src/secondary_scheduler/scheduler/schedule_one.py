"""One pod's way from the queue to its Binding: kube-scheduler's ``schedule_one.go``.

The path of one pod, and where each step lives:

1. **Scheduling half** (``schedule_pod``, or ``schedule_pod_with_extenders`` when extenders are
   configured; upstream's schedulePod): PreFilter; Filter over the nodes, the pod's nominated
   node first, starting where the profile's previous cycle stopped and stopping once enough
   feasible nodes are found (percentageOfNodesToScore), with the pods nominated to a node
   counted on it (``framework.nominated_filter``); the extenders' filters; PostFilter
   (preemption) when nothing fits; PreScore, Score, NormalizeScore and weights (plus the
   extenders' scores) over the feasible nodes; the best total wins, ties broken at random.
   It is synchronous over the NodeTable: in asyncio nothing else touches the table meanwhile
   (the extenders' HTTP calls are awaited before PreScore, then the nodes are found again by
   name). The plugins themselves are run by ``Framework`` (``framework.runtime``).
2. **Assume, Reserve, Permit** (``ScheduleOne.scheduling_cycle``): the pod is counted on its
   node at once, so the next cycles never give its room away; a Permit plugin may hold it.
3. **Binding half** (``ScheduleOne.binding_cycle``, run in the background by the loop): wait
   on Permit, PreBind, Bind (a binder extender, else the bind plugins: DefaultBinder posts the
   Binding), PostBind. Any failure unreserves, forgets the assumed pod and requeues it.
4. **Failure handling** (upstream's handleSchedulingFailure and handleBindingCycleError): the
   metrics, the requeue with the plugins whose events can help, the FailedScheduling Event,
   the PodScheduled=False condition and nomination on the pod, and the cluster event that
   lets other pods take the room a failed binding gave back.

Who calls it:

- the live loop (``scheduler.scheduler.Scheduler.run``): pops a pod, ``scheduling_cycle``,
  spawns ``binding_cycle``; its collaborators are the informer-fed table, the assumed pods,
  the scheduling queue, the Event recorder and the pod-status writer;
- ``secsched score`` (``cli.score_run``): ``schedule_pod`` with ``explain=True`` only;
- the replay engine: ``ScheduleOne`` over an in-memory table, assumed cache and queue, with
  its own clock, a client that applies Bindings to its state and no-op sinks.

Everything ``ScheduleOne`` touches besides the profiles' frameworks is handed to it
(``CycleQueue``, ``AssumedCache``, ``EventsSink``, ``PodStatusSink``, metrics, a clock, the
cluster-event callback): nothing here reaches into the scheduler that runs it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import POD, ActionType, ClusterEvent
from secondary_scheduler.framework.extender import EXTENDER_NAME, MAX_EXTENDER_PRIORITY, ExtenderError
from secondary_scheduler.framework.interface import CycleState, FilterError
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.nominated_filter import (
    filter_node_with_nominated_pods,
    nominated_pods_by_slot,
    rejections_with_nominated_pods,
)
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.result import Explanation, PluginScores, ScheduleResult
from secondary_scheduler.framework.runtime import Framework, not_in_pre_filter_result
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.framework.status import SUCCESS, Code, Status
from secondary_scheduler.scheduler.podstatus import SCHEDULER_ERROR, UNSCHEDULABLE

if TYPE_CHECKING:
    from secondary_scheduler.framework.waiting import WaitingPod
    from secondary_scheduler.scheduler.metrics import SchedulerMetrics
    from secondary_scheduler.scheduler.queue import QueuedPod

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
BIND_CONCURRENCY = 64
"""Bind calls in flight at most. Under a backlog the cycle outruns the API server, so the slots
stay busy, and a kill -9 leaves about as many pods bound with no Scheduled Event as there are
Bind calls in flight (the API server answers them after the scheduler died; the Events of the
bindings answered are queued within a millisecond, see kube/events/sender.py). Measured on a
shared 2-core machine (docs/reliability.md, `python -m bench.chaos --events-probe-only`): 64
slots lost 6-30 % of the bound pods' Events, 16 a steady 5-8 %, 8 about 3 %; but the throughput
benchmark at 1,000 nodes (`python -m bench --only throughput --sizes 1000`), where the API
server answers a Binding in 100-200 ms and more calls in flight do bind faster, held ours to
141 pods/s with 16 (its pods waiting 3.1-3.6 s for a slot, created at 250-300/s), where 64
kept up with the pods' creation (168-181 pods/s, 0.2 s per attempt) in the runs just before.
So 64 stays until the limit can follow what the API server takes (issue 41, item 4)."""


# -- the scheduling half (schedulePod) ----------------------------------------------------------
def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (kube-scheduler's numFeasibleNodesToFind).

    Small clusters (under 100 nodes) are searched whole. Unset or 0 percentage is adaptive:
    50% minus 1% per 125 nodes, at least 5%; and never fewer than 100 nodes.
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if percentage >= 100:
        return num_all_nodes
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def first_filter_batch(wanted: int, count: int) -> int:
    """How many candidates the filters see first: a little over ``wanted``, enough when nearly
    every node fits; the others are filtered only when that batch did not find enough."""
    return min(count, wanted + wanted // 4 + 1)


class _CycleError(Exception):
    """Ends a scheduling cycle with a status (an Error from PreScore or Score)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


class _FilterPass:
    """The filters' outcome; the per-node diagnosis is built only when asked (a pod that fits needs none)."""

    def __init__(
        self, feasible: Slots, evaluated: int, diagnose: Callable[[], Diagnosis], nominated: bool = False
    ) -> None:
        self.feasible = feasible
        self.evaluated = evaluated
        self.nominated = nominated
        """Only the pod's nominated node was filtered (it fits there)."""
        self._diagnose = diagnose

    @functools.cached_property
    def diagnosis(self) -> Diagnosis:
        return self._diagnose()


def schedule_pod(
    framework: Framework,
    pod: PodInfo,
    table: NodeTable,
    state: CycleState | None = None,
    *,
    explain: bool = False,
) -> ScheduleResult:
    """Pick a node for ``pod`` with ``framework``'s profile (its extenders are not called: see
    ``schedule_pod_with_extenders``); ``explain`` keeps every score (and scores even a single
    feasible node) and the diagnosis of the rejected nodes."""
    state = state if state is not None else CycleState()
    found = _find_nodes_that_fit(framework, state, pod, table)
    if isinstance(found, ScheduleResult):
        return found
    if not len(found.feasible):
        return _unschedulable(framework, state, pod, table, found.diagnosis, found.evaluated)
    return _conclude(framework, state, pod, table, found, explain, {})


async def schedule_pod_with_extenders(
    framework: Framework,
    pod: PodInfo,
    table: NodeTable,
    state: CycleState | None = None,
    *,
    explain: bool = False,
) -> ScheduleResult:
    """``schedule_pod`` with the extenders: their filters after the filter plugins, their scores added.

    As kube-scheduler: each interested extender filters in turn what the previous left
    (an ignorable one's error skips it, another's fails the cycle); the nodes it rejects
    get its reason in the diagnosis; with one node left nothing scores; otherwise the
    prioritizers' scores (weighted, scaled to MaxNodeScore) add to the plugins' totals
    (a prioritizer's error only drops its scores). The HTTP calls are awaited before
    PreScore, so Score and the selection still run on the table as it is then.
    """
    state = state if state is not None else CycleState()
    found = _find_nodes_that_fit(framework, state, pod, table)
    if isinstance(found, ScheduleResult):
        return found
    try:
        names = await _find_nodes_that_pass_extenders(framework, pod, table, found)
        if found.nominated and not names:
            # The nominated node passed the plugins but not the extenders: try every node.
            found = _find_nodes_that_pass_filters(framework, state, pod, table, try_nominated=False)
            names = await _find_nodes_that_pass_extenders(framework, pod, table, found)
    except ExtenderError as error:
        return ScheduleResult(Status.error(str(error)), diagnosis=found.diagnosis)
    extender_scores: dict[str, dict[str, int]] = {}
    if len(names) > 1 or (explain and names):
        extender_scores = await _prioritize_with_extenders(framework, pod, table, names)
    # The table may have changed while the extenders answered: find the nodes again by name.
    slots = [table.slot_of(name) for name in names]
    found.feasible = np.array([slot for slot in slots if slot is not None], dtype=np.intp)
    found.evaluated = len(found.feasible) + found.diagnosis.num_rejected
    if not len(found.feasible):
        return _unschedulable(framework, state, pod, table, found.diagnosis, found.evaluated)
    return _conclude(framework, state, pod, table, found, explain, extender_scores)


def _find_nodes_that_fit(
    framework: Framework, state: CycleState, pod: PodInfo, table: NodeTable
) -> ScheduleResult | _FilterPass:
    """PreFilter and Filter: the feasible nodes, or the cycle's end (an error, a PreFilter rejection)."""
    if table.num_nodes == 0:
        return ScheduleResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_NODES_AVAILABLE,)))
    status = framework.run_pre_filter_plugins(state, pod, table)
    if status.code == Code.ERROR:
        return ScheduleResult(status)
    if status.is_rejected:
        # As upstream: the plugins that narrowed the nodes, unless one rejected unresolvably.
        plugins = (
            set(state.pre_filter_narrowed_by)
            if status.code == Code.UNSCHEDULABLE or not status.plugin
            else set()
        )
        if status.plugin:
            plugins.add(status.plugin)
        diagnosis = Diagnosis(
            table.num_nodes,
            absent_status=status,
            pre_filter_message=status.message,
            unschedulable_plugins=plugins,
        )
        return _unschedulable(framework, state, pod, table, diagnosis, evaluated=0)
    try:
        return _find_nodes_that_pass_filters(framework, state, pod, table)
    except FilterError as error:
        return ScheduleResult(Status.error(str(error)))


def _find_nodes_that_pass_filters(
    framework: Framework, state: CycleState, pod: PodInfo, table: NodeTable, *, try_nominated: bool = True
) -> _FilterPass:
    """Filter every node (vectorised), counting nominated pods of equal or higher priority.

    As kube-scheduler: a pod that preemption nominated to a node tries that node first
    (evaluateNominatedNode) and takes it if it fits there; a node where other pods of at
    least this pod's priority are nominated fits only if the filters pass both with those
    pods counted on it and without them (RunFilterPluginsWithNominatedPods). Nodes without
    nominations (nearly all) take the vectorised path only.
    """
    nominated = nominated_pods_by_slot(framework, pod, table)
    own_node = framework.handle.nominator.node_of(pod.uid) if try_nominated else None
    if own_node is not None:
        own_slot = table.slot_of(own_node)
        if own_slot is not None:
            own_status = filter_node_with_nominated_pods(
                framework, state, pod, table, own_slot, nominated.get(own_slot, ())
            )
            if own_status.is_success:
                own = np.array([own_slot], dtype=np.intp)
                return _FilterPass(own, 1, lambda: Diagnosis(table.num_nodes), nominated=True)
    active = table.node_order()
    num_all_nodes = len(active)
    allowed = state.pre_filter_nodes
    if allowed is not None:  # PreFilter named the only nodes to filter
        active = _slots_named(table, active, allowed)
    count = len(active)
    if not count:  # PreFilter named no node the table has
        return _FilterPass(active, 0, lambda: _narrowed(Diagnosis(table.num_nodes), state))
    start = framework.next_start_index % count
    candidates = np.concatenate([active[start:], active[:start]])
    wanted = num_feasible_nodes_to_find(framework.percentage_of_nodes_to_score, count)
    rejected_by, unresolvable, rejections, overrides = _filter_in_order(
        framework, state, pod, table, candidates, nominated, wanted
    )
    feasible = np.flatnonzero(rejected_by < 0)
    processed = count
    if len(feasible) > wanted:
        feasible = feasible[:wanted]
        processed = int(feasible[-1]) + 1
    framework.next_start_index = (framework.next_start_index + processed) % num_all_nodes
    rejected = rejected_by[:processed]

    def diagnose() -> Diagnosis:
        diagnosis = framework.diagnose(table, candidates, rejected, unresolvable, rejections, overrides)
        return _narrowed(diagnosis, state) if allowed is not None else diagnosis

    evaluated = len(feasible) + int(np.count_nonzero(rejected >= 0))
    return _FilterPass(candidates[feasible], evaluated, diagnose)


def _narrowed(diagnosis: Diagnosis, state: CycleState) -> Diagnosis:
    """The diagnosis with the nodes PreFilter left out rejected unresolvably, in upstream's words."""
    diagnosis.absent_status = not_in_pre_filter_result(state.pre_filter_narrowed_by)
    diagnosis.unschedulable_plugins |= state.pre_filter_narrowed_by
    return diagnosis


def _slots_named(table: NodeTable, order: Slots, names: frozenset[str]) -> Slots:
    """The slots of ``order`` whose node is one of ``names`` (names no node has are ignored)."""
    wanted = np.zeros(table.capacity, dtype=np.bool_)
    for name in names:
        slot = table.slot_of(name)
        if slot is not None:
            wanted[slot] = True
    return order[wanted[order]]


def _filter_in_order(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    candidates: Slots,
    nominated: Mapping[int, list[PodInfo]],
    wanted: int,
) -> tuple[IntArray, BoolArray, list[tuple[Slots, str]], dict[int, Status]]:
    """Filter the candidates in order until more than ``wanted`` fit (or all are filtered):
    a first batch a little over ``wanted`` (enough when nearly every node fits), then the rest.

    What comes back covers the evaluated prefix of ``candidates``: what upstream's search,
    stopping at the first feasible node past the ones it wants, would have looked at. A node
    past that prefix is never read (its feasibility, like upstream's, is left unknown).
    """
    first = first_filter_batch(wanted, len(candidates))
    parts: list[tuple[IntArray, BoolArray]] = []
    rejections: list[tuple[Slots, str]] = []
    overrides: dict[int, Status] = {}
    feasible = 0
    rejected_with_nominated = len(framework.filter_plugins)  # past every plugin: the status is in overrides
    for begin, end in ((0, first), (first, len(candidates))):
        if begin == end or feasible > wanted:
            break
        batch = candidates[begin:end]
        rejected_by, unresolvable, found = framework.run_filter_plugins(state, pod, table, batch)
        for position, status in rejections_with_nominated_pods(
            framework, state, pod, table, batch, nominated
        ).items():
            rejected_by[position] = rejected_with_nominated
            overrides[position + begin] = status
        parts.append((rejected_by, unresolvable))
        rejections += [(positions + begin, reason) for positions, reason in found]
        feasible += int(np.count_nonzero(rejected_by < 0))
    rejected_by = np.concatenate([rejected for rejected, _ in parts])
    unresolvable = np.concatenate([flags for _, flags in parts])
    return rejected_by, unresolvable, rejections, overrides


async def _find_nodes_that_pass_extenders(
    framework: Framework, pod: PodInfo, table: NodeTable, found: _FilterPass
) -> list[str]:
    """findNodesThatPassExtenders: the feasible nodes' names that every interested extender keeps."""
    names = [table.names[slot] for slot in found.feasible]
    before = len(names)
    diagnosis = found.diagnosis
    for extender in framework.extenders:
        if not names:
            break
        if not extender.is_filter or not extender.is_interested(pod):
            continue
        try:
            result = await extender.filter(pod, table, names)
        except ExtenderError as error:
            if extender.ignorable:
                log.info(
                    "skipping extender %s: it returned an error and is ignorable: %s", extender.name, error
                )
                continue
            raise
        for node, message in result.failed_and_unresolvable.items():
            diagnosis.add_node_status(node, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,)))
        for node, message in result.failed.items():
            if node not in result.failed_and_unresolvable:
                diagnosis.add_node_status(node, Status(Code.UNSCHEDULABLE, (message,)))
        names = list(result.nodes)
    if len(names) != before:
        diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
    return names


async def _prioritize_with_extenders(
    framework: Framework, pod: PodInfo, table: NodeTable, names: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Extender -> node -> final score (score x weight x MaxNodeScore / MaxExtenderPriority)."""
    asking = [ext for ext in framework.extenders if ext.is_prioritizer and ext.is_interested(pod)]
    if not asking:
        return {}
    answers = await asyncio.gather(
        *(ext.prioritize(pod, table, names) for ext in asking), return_exceptions=True
    )
    scores: dict[str, dict[str, int]] = {}
    for extender, answer in zip(asking, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, ExtenderError):
                raise answer
            log.debug("extender %s failed to prioritize, no score from it: %s", extender.name, answer)
            continue
        factor = extender.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        own = scores.setdefault(extender.name, {})
        for node, score in answer.items():
            own[node] = own.get(node, 0) + score * factor
    return scores


def _conclude(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    found: _FilterPass,
    explain: bool,
    extender_scores: Mapping[str, Mapping[str, int]],
) -> ScheduleResult:
    """Score the feasible nodes (plugins, plus the extenders' scores by node) and pick one."""
    try:
        selected, explanation = _select_host(
            framework, state, pod, table, found.feasible, explain, extender_scores
        )
    except _CycleError as error:
        return ScheduleResult(error.status, diagnosis=found.diagnosis)
    return ScheduleResult(
        SUCCESS,
        node_name=table.names[selected],
        evaluated_nodes=found.evaluated,
        feasible_nodes=len(found.feasible),
        diagnosis=found.diagnosis if explain else None,
        explanation=explanation,
    )


def _unschedulable(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    diagnosis: Diagnosis,
    evaluated: int,
) -> ScheduleResult:
    """Run PostFilter (preemption may nominate a node) and report the FitError."""
    status, nominated = framework.run_post_filter_plugins(state, pod, table, diagnosis)
    if status.code == Code.ERROR:
        return ScheduleResult(status, diagnosis=diagnosis)
    diagnosis.post_filter_message = status.message
    return ScheduleResult(
        Status.unschedulable(diagnosis.message()),
        evaluated_nodes=evaluated,
        diagnosis=diagnosis,
        nominated_node=_nominate(framework, pod, nominated),
    )


def _nominate(framework: Framework, pod: PodInfo, node: str | None) -> str | None:
    """Apply PostFilter's nomination in memory now, so the next cycle already keeps the room
    (kube-scheduler's AddNominatedPod); the nomination to write on the pod if it changed."""
    if node is None:
        return None
    nominator = framework.handle.nominator
    had = nominator.node_of(pod.uid) or (pod.obj.get("status") or {}).get("nominatedNodeName") or ""
    if node:
        nominator.add(pod, node)
    else:
        nominator.remove(pod.uid)
    return node if node != had else None


def _select_host(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    feasible: Slots,
    explain: bool,
    extender_scores: Mapping[str, Mapping[str, int]],
) -> tuple[int, Explanation | None]:
    """The feasible node with the best total (a single one is not scored unless explaining)."""
    if len(feasible) == 1 and not explain:
        return int(feasible[0]), None
    totals, explanation = _prioritize_nodes(framework, state, pod, table, feasible, explain, extender_scores)
    best = np.flatnonzero(totals == totals.max())
    return int(feasible[best[framework.rng.randrange(len(best))]]), explanation


def _prioritize_nodes(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    nodes: Slots,
    explain: bool,
    extender_scores: Mapping[str, Mapping[str, int]],
) -> tuple[IntArray, Explanation | None]:
    """PreScore and Score over the feasible nodes, plus the extenders' scores (prioritizeNodes)."""
    status = framework.run_pre_score_plugins(state, pod, table, nodes)
    if not status.is_success:
        raise _CycleError(status)
    explained: list[PluginScores] | None = [] if explain else None
    totals, status = framework.run_score_plugins(state, pod, table, nodes, explained)
    if not status.is_success:
        raise _CycleError(status)
    for extender, by_node in extender_scores.items():
        final = np.array([by_node.get(table.names[slot], 0) for slot in nodes.tolist()], dtype=np.int64)
        totals += final
        if explained is not None:
            explained.append(PluginScores(f"extender {extender}", 1, final, final))
    if explained is None:
        return totals, None
    names = tuple(table.names[slot] for slot in nodes)
    return totals, Explanation(names, tuple(explained), totals)


async def bind(framework: Framework, state: CycleState, pod: PodInfo, node_name: str) -> Status:
    """The binder extender (if interested), else the first bind plugin not returning Skip; then PostBind.

    As kube-scheduler's extendersBinding: an ignorable extender's error falls through to
    the next binder; another's fails the binding.
    """
    status: Status | None = None
    for extender in framework.extenders:
        if not extender.is_binder or not extender.is_interested(pod):
            continue
        try:
            await extender.bind(pod, node_name)
        except ExtenderError as error:
            if extender.ignorable:
                log.info(
                    "skipping extender %s in bind: it returned an error and is ignorable: %s",
                    extender.name,
                    error,
                )
                continue
            return Status.error(str(error))
        status = SUCCESS
        break
    if status is None:
        status = await framework.run_bind_plugins(state, pod, node_name)
    if status.is_success:
        framework.run_post_bind_plugins(state, pod, node_name)
    return status


# -- the whole cycle for one queued pod ---------------------------------------------------------
class CycleQueue(Protocol):
    """What the cycle asks of the scheduling queue (``SchedulingQueue`` is one)."""

    def requeue_failed(
        self, item: QueuedPod[PodInfo], unschedulable: bool, rejectors: frozenset[str] = ...
    ) -> None:
        """After a failed attempt: wait for an event that may help (``rejectors``) or back off."""
        ...

    def done(self, key: str) -> None:
        """The pod was bound: forget it."""
        ...

    def drop_events_in_flight(self, key: str) -> None:
        """Forget the cluster events seen while this pod was in its cycle (it waited at Permit)."""
        ...


class AssumedCache(Protocol):
    """Pods placed but not yet seen bound (``AssumedPods`` is one): the table counts them."""

    def assume(self, pod: PodInfo, node: str) -> None: ...

    def forget(self, pod: PodInfo) -> None: ...

    def finish_binding(self, pod: PodInfo) -> None: ...


class EventsSink(Protocol):
    """Where the cycle reports Scheduled and FailedScheduling Events (``SchedulerEvents``)."""

    def scheduled(self, pod: PodInfo, scheduler_name: str, node: str) -> None: ...

    def failed(self, pod: PodInfo, scheduler_name: str, message: str) -> None: ...


class PodStatusSink(Protocol):
    """Where the cycle writes a pending pod's PodScheduled condition and nomination (``PodStatusWriter``)."""

    def update(
        self, pod: PodInfo, *, reason: str | None = ..., message: str = ..., nominated: str | None = ...
    ) -> None: ...

    def forget(self, uid: str) -> None:
        """The pod is being bound: drop what is unsent for it."""
        ...


ClusterEventSink = Callable[[ClusterEvent, Any, Any, str], None]
"""``(event, old, new, skip)``: move back the waiting pods ``event`` may help, except the pod
keyed ``skip`` (the loop's queueing-hint wiring; the cycle reports the room a failed binding
gave back through it)."""


@dataclass(slots=True)
class PendingBinding:
    """A pod assumed on its node, reserved and permitted (or held at Permit): the binding half's input."""

    item: QueuedPod[PodInfo]
    framework: Framework
    state: CycleState
    node: str
    started: float
    """``ScheduleOne.clock`` when the attempt began (the attempt-duration metric)."""
    waiting: WaitingPod | None
    """Set when a Permit plugin holds the pod: the binding half waits for its verdict first."""


class ScheduleOne:
    """The scheduling cycle and the binding cycle of one pod at a time, over injected state.

    ``frameworks``: profile (scheduler name) -> its Framework. ``table`` is the NodeTable the
    cycle schedules into and ``assumed`` counts pods on it while they bind. ``queue`` takes
    failed pods back; ``on_cluster_event`` hears the room a failed binding frees. ``events``,
    ``pod_status`` and ``metrics`` are where the outcome is reported (pass no-op sinks and a
    fresh ``SchedulerMetrics()`` to report nowhere). ``clock`` (seconds, monotonic) times the
    attempts and must be the queue's clock (``QueuedPod.initial_timestamp``).
    ``bind_concurrency`` bounds the Bind calls in flight (PreBind may wait without a slot).
    """

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        table: NodeTable,
        assumed: AssumedCache,
        queue: CycleQueue,
        *,
        events: EventsSink,
        pod_status: PodStatusSink,
        metrics: SchedulerMetrics,
        on_cluster_event: ClusterEventSink,
        clock: Callable[[], float] = time.monotonic,
        bind_concurrency: int = BIND_CONCURRENCY,
    ) -> None:
        self.frameworks = frameworks
        self.table = table
        self.assumed = assumed
        self.queue = queue
        self.events = events
        self.pod_status = pod_status
        self.metrics = metrics
        self.on_cluster_event = on_cluster_event
        self.clock = clock
        self._bind_slots = asyncio.Semaphore(bind_concurrency)

    # -- the scheduling cycle ----------------------------------------------------------------
    def scheduling_cycle(self, item: QueuedPod[PodInfo]) -> PendingBinding | None:
        """Schedule the pod (no extenders), then assume, Reserve and Permit; None when it failed
        (already requeued and reported)."""
        framework = self.frameworks[item.pod.scheduler_name]
        started = self.clock()
        state = CycleState()
        try:
            result = schedule_pod(framework, item.pod, self.table, state)
        except Exception as error:
            self._cycle_crashed(item, framework, error, started)
            return None
        return self._assume_reserve_permit(item, framework, state, result, started)

    async def scheduling_cycle_async(self, item: QueuedPod[PodInfo]) -> PendingBinding | None:
        """``scheduling_cycle`` when extenders are configured: their HTTP calls are awaited mid-cycle.

        Cycles must still run one at a time (the loop awaits this), so only watch events and
        bindings run meanwhile; the nodes are found again by name afterwards.
        """
        framework = self.frameworks[item.pod.scheduler_name]
        started = self.clock()
        state = CycleState()
        try:
            result = await schedule_pod_with_extenders(framework, item.pod, self.table, state)
        except Exception as error:
            self._cycle_crashed(item, framework, error, started)
            return None
        return self._assume_reserve_permit(item, framework, state, result, started)

    def _cycle_crashed(
        self, item: QueuedPod[PodInfo], framework: Framework, error: Exception, started: float
    ) -> None:
        log.exception("error scheduling pod %s", item.pod.key, exc_info=error)
        message = f"running the scheduling framework: {error}"
        self._handle_scheduling_failure(item, framework.scheduler_name, message, started, unschedulable=False)

    def _assume_reserve_permit(
        self,
        item: QueuedPod[PodInfo],
        framework: Framework,
        state: CycleState,
        result: ScheduleResult,
        started: float,
    ) -> PendingBinding | None:
        """Assume, Reserve and Permit on the chosen node; or report why there is none."""
        pod = item.pod
        profile = framework.scheduler_name
        node = result.node_name
        if node is None:
            unschedulable = result.status.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            diagnosis = result.diagnosis
            rejectors = frozenset(diagnosis.unschedulable_plugins) if diagnosis is not None else frozenset()
            self._handle_scheduling_failure(
                item,
                profile,
                result.message,
                started,
                unschedulable=unschedulable,
                rejectors=rejectors,
                nominated=result.nominated_node,
            )
            return None
        self.pod_status.forget(pod.uid)  # an unsent failure of an earlier attempt is obsolete now
        self.assumed.assume(pod, node)
        status = framework.run_reserve_plugins_reserve(state, pod, node)
        waiting: WaitingPod | None = None
        if status.is_success:
            permit = framework.run_permit_plugins(state, pod, node)
            status = permit.status
            if status.code == Code.WAIT:
                # Held by a Permit plugin: the pod keeps its room while its binding cycle waits.
                waiting = framework.handle.waiting_pods.add(pod, node, permit.timeouts)
                status = SUCCESS
        if not status.is_success:
            framework.run_reserve_plugins_unreserve(state, pod, node)
            self.assumed.forget(pod)
            rejectors = frozenset({status.plugin} if status.plugin else ())
            self._handle_scheduling_failure(
                item, profile, status.message, started, status.is_rejected, rejectors
            )
            return None
        return PendingBinding(item, framework, state, node, started, waiting)

    # -- the binding cycle -------------------------------------------------------------------
    async def binding_cycle(self, binding: PendingBinding) -> None:
        """Wait on Permit, PreBind, Bind, PostBind; on success report it, on failure undo and requeue.

        Run it as a task of its own: a pod held at Permit waits here until a plugin allows
        or rejects it (a gang's siblings must be scheduled meanwhile).
        """
        item, framework, state, node = binding.item, binding.framework, binding.state, binding.node
        pod = item.pod
        profile = framework.scheduler_name
        if binding.waiting is not None:
            try:
                allowed = await binding.waiting.wait()
            finally:
                framework.handle.waiting_pods.remove(pod.uid)
            if not allowed.is_success:
                framework.run_reserve_plugins_unreserve(state, pod, node)
                self.assumed.forget(pod)
                rejectors = frozenset({allowed.plugin} if allowed.plugin else ())
                # The pod had room: cluster events during its wait cannot be why it failed, so
                # they do not send it to backoff (see SchedulingQueue.drop_events_in_flight).
                self.queue.drop_events_in_flight(pod.key)
                self._handle_scheduling_failure(
                    item, profile, allowed.message, binding.started, allowed.is_rejected, rejectors
                )
                # The room the pod held while it waited is free again: pods waiting for room may
                # fit now. After the requeue, as kube-scheduler defers it (handleBindingCycleError).
                self.on_cluster_event(ClusterEvent(POD, ActionType.DELETE), pod, None, pod.key)
                return
        # PreBind may wait long (volumes being provisioned): only the Bind call takes a slot.
        status = await framework.run_pre_bind_plugins(state, pod, node)
        if status.is_success:
            async with self._bind_slots:
                status = await bind(framework, state, pod, node)
        if not status.is_success:
            self._handle_binding_cycle_error(binding, status)
            return
        self.assumed.finish_binding(pod)
        self.queue.done(pod.key)
        elapsed = self.clock() - binding.started
        self.metrics.schedule_attempts.labels("scheduled", profile).inc()
        self.metrics.attempt_duration.labels("scheduled", profile).observe(elapsed)
        self.metrics.pod_scheduling_attempts.observe(item.attempts)
        self.metrics.pod_scheduling_sli_duration.labels(str(min(item.attempts, 16))).observe(
            self.clock() - item.initial_timestamp
        )
        self.events.scheduled(pod, profile, node)
        framework.handle.pod_bound(pod, node)
        log.debug("bound %s to %s in %.1f ms", pod.key, node, elapsed * 1000)

    def _handle_binding_cycle_error(self, binding: PendingBinding, status: Status) -> None:
        """PreBind or Bind failed: unreserve, forget the assumed pod, requeue it, free its room.

        As kube-scheduler's handleBindingCycleError, the room is announced after the requeue
        for a rejection (so the pod itself waits for a new event), before it for an error.
        """
        item, framework, state, node = binding.item, binding.framework, binding.state, binding.node
        pod = item.pod
        framework.run_reserve_plugins_unreserve(state, pod, node)
        self.assumed.forget(pod)
        rejectors = frozenset({status.plugin} if status.is_rejected and status.plugin else ())
        freed = ClusterEvent(POD, ActionType.DELETE)
        if not status.is_rejected:
            self.on_cluster_event(freed, pod, None, "")
        self._handle_scheduling_failure(
            item, framework.scheduler_name, status.message, binding.started, status.is_rejected, rejectors
        )
        if status.is_rejected:
            self.on_cluster_event(freed, pod, None, pod.key)

    # -- failures ------------------------------------------------------------------------------
    def _handle_scheduling_failure(
        self,
        item: QueuedPod[PodInfo],
        profile: str,
        message: str,
        started: float,
        unschedulable: bool,
        rejectors: frozenset[str] = frozenset(),
        nominated: str | None = None,
    ) -> None:
        """Requeue the pod (``rejectors``: the plugins whose events can help it) and tell its user.

        ``nominated``: the nomination PostFilter changed (a node, or "" for none), written in
        the same status patch as the condition, as kube-scheduler's failure handler does.
        """
        pod = item.pod
        result = "unschedulable" if unschedulable else "error"
        self.metrics.schedule_attempts.labels(result, profile).inc()
        self.metrics.attempt_duration.labels(result, profile).observe(self.clock() - started)
        log.info("unable to schedule pod %s: %s", pod.key, message)
        self.queue.requeue_failed(item, unschedulable=unschedulable, rejectors=rejectors)
        self.events.failed(pod, profile, message)
        reason = UNSCHEDULABLE if unschedulable else SCHEDULER_ERROR
        self.pod_status.update(pod, reason=reason, message=message, nominated=nominated)
