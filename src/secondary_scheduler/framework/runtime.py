"""``Framework``: one profile's plugins, run over the NodeTable for one pod at a time.

``schedule`` is kube-scheduler's scheduling algorithm: PreFilter; Filter over the nodes,
starting where the previous cycle stopped and stopping once enough feasible nodes are
found (percentageOfNodesToScore); PostFilter when none fits; PreScore, Score,
NormalizeScore and weights over the feasible nodes; the best total wins, ties broken at
random. It is synchronous: in asyncio nothing else touches the table meanwhile.
``schedule_async`` is the same cycle for a scheduler with extenders: their HTTP filter and
prioritize calls are awaited between Filter and PreScore (then the nodes are found again by
name), so profiles without extenders never leave the synchronous path.

Filters run vectorised: each filter plugin sees only the candidates every earlier filter
accepted, so a rejected node's reasons come from the first plugin that rejected it, as in
kube-scheduler. The binding cycle (``reserve``, ``permit``, ``bind_cycle``) is driven by
the runtime, which owns the queue and the API client.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.framework.diagnosis import Diagnosis, RejectedNodes
from secondary_scheduler.framework.events import ClusterEvent
from secondary_scheduler.framework.extender import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    Extender,
    ExtenderError,
)
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    BindPlugin,
    CycleState,
    FilterError,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PodPredicate,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.podmoves import PodMoves
from secondary_scheduler.framework.profile import ExtensionPoint, ProfileLike
from secondary_scheduler.framework.result import Explanation, PluginScores, ScheduleResult
from secondary_scheduler.framework.scores import MAX_NODE_SCORE, MIN_NODE_SCORE
from secondary_scheduler.framework.status import SUCCESS, Code, Status

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
MAX_PERMIT_TIMEOUT = 15 * 60.0
NO_NODES_AVAILABLE = "no nodes available to schedule pods"

_Kind = TypeVar("_Kind", bound=Plugin)


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


@dataclass(frozen=True)
class PermitResult:
    status: Status
    """Success, Wait (the runtime holds the pod) or a rejection/error."""
    timeouts: Mapping[str, float] = field(default_factory=dict)
    """Plugin -> seconds to wait for it, when the status is Wait."""


class _CycleError(Exception):
    """Ends a scheduling cycle with a status (an Error from PreScore or Score)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def _reads_any_pod(other: PodInfo) -> bool:
    return True


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


class Framework:
    def __init__(
        self,
        profile: ProfileLike,
        registry: Mapping[str, type[Plugin]],
        handle: Handle,
        *,
        percentage_of_nodes_to_score: int | None = None,
        rng: random.Random | None = None,
        extenders: Sequence[Extender] = (),
    ) -> None:
        """``percentage_of_nodes_to_score`` is the configuration's global value, for profiles without one.

        ``extenders`` (the configuration's, ignorable ones last) run after the filter plugins,
        score next to the score plugins and bind before the bind plugins; with any, the
        scheduling cycle is ``schedule_async``.
        """
        self.profile = profile
        self.extenders = tuple(extenders)
        own_percentage = profile.percentage_of_nodes_to_score
        self.percentage_of_nodes_to_score = (
            percentage_of_nodes_to_score if own_percentage is None else own_percentage
        )
        self.handle = handle.for_framework(self)
        """The shared handle as this profile's plugins see it (``handle.framework`` is this)."""
        self._registry = registry
        self._instances: dict[str, Plugin] = {}
        self._rng = rng or random.Random()
        self._next_start_index = 0
        self.queue_sort_plugins = self._plugins_at(ExtensionPoint.QUEUE_SORT, QueueSortPlugin)
        self.pre_enqueue_plugins = self._plugins_at(ExtensionPoint.PRE_ENQUEUE, PreEnqueuePlugin)
        self.pre_filter_plugins = self._plugins_at(ExtensionPoint.PRE_FILTER, PreFilterPlugin)
        self.filter_plugins = self._plugins_at(ExtensionPoint.FILTER, FilterPlugin)
        self.post_filter_plugins = self._plugins_at(ExtensionPoint.POST_FILTER, PostFilterPlugin)
        if self.post_filter_plugins:  # they may nominate: keep the nominations the pods show
            self.handle.nominator.watch(self.handle, self.scheduler_name)
        self.pre_score_plugins = self._plugins_at(ExtensionPoint.PRE_SCORE, PreScorePlugin)
        self.score_plugins = self._plugins_at(ExtensionPoint.SCORE, ScorePlugin)
        self.reserve_plugins = self._plugins_at(ExtensionPoint.RESERVE, ReservePlugin)
        self.permit_plugins = self._plugins_at(ExtensionPoint.PERMIT, PermitPlugin)
        self.pre_bind_plugins = self._plugins_at(ExtensionPoint.PRE_BIND, PreBindPlugin)
        self.bind_plugins = self._plugins_at(ExtensionPoint.BIND, BindPlugin)
        self.post_bind_plugins = self._plugins_at(ExtensionPoint.POST_BIND, PostBindPlugin)
        self.score_weights = {
            name: weight or 1 for name, weight in profile.plugins.get(ExtensionPoint.SCORE, ())
        }
        self._registrations = {name: plugin.events_to_register() for name, plugin in self._instances.items()}
        """Plugin -> the cluster events that can undo its rejections (None: any), asked once."""
        if len(self.queue_sort_plugins) > 1:
            raise ValueError(f"profile {profile.scheduler_name!r}: only one queueSort plugin may be enabled")

    @property
    def scheduler_name(self) -> str:
        return self.profile.scheduler_name

    def _plugins_at(self, point: ExtensionPoint, kind: type[_Kind]) -> list[_Kind]:
        """The plugins enabled at ``point``, in order; a plugin enabled at several points is built once."""
        plugins = []
        for name, _weight in self.profile.plugins.get(point, ()):
            plugin = self._instances.get(name)
            if plugin is None:
                plugin_class = self._registry.get(name)
                if plugin_class is None:
                    known = ", ".join(sorted(self._registry))
                    raise ValueError(
                        f"profile {self.scheduler_name!r}: unknown plugin {name!r} (known: {known})"
                    )
                args = validated_args(plugin_class, self.profile.plugin_args.get(name))
                plugin = plugin_class(args, self.handle)
                self._instances[name] = plugin
            if not isinstance(plugin, kind):
                raise ValueError(
                    f"profile {self.scheduler_name!r}: plugin {name!r} does not implement {point}"
                )
            plugins.append(plugin)
        return plugins

    def worth_requeuing(
        self, pod: PodInfo, rejectors: frozenset[str], event: ClusterEvent, old: object, new: object
    ) -> bool:
        """Whether ``event`` may let ``pod`` fit, by the queueing hints of the plugins that rejected it."""
        if not rejectors:
            return True
        for name in rejectors:
            registrations = self._registrations.get(name)
            if registrations is None:
                return True
            for registration in registrations:
                if registration.event.matches(event) and (
                    registration.hint is None or registration.hint(pod, old, new)
                ):
                    return True
        return False

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        """Whether the pod may enter the active queue (e.g. no scheduling gates left)."""
        for plugin in self.pre_enqueue_plugins:
            status = plugin.pre_enqueue(pod)
            if not status.is_success:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if not self.queue_sort_plugins:
            raise RuntimeError(f"profile {self.scheduler_name!r} has no queueSort plugin")
        return self.queue_sort_plugins[0].less(a, b)

    def schedule(
        self, pod: PodInfo, table: NodeTable, state: CycleState | None = None, *, explain: bool = False
    ) -> ScheduleResult:
        """Pick a node for ``pod``; ``explain`` keeps every score (and scores even a single feasible node)."""
        state = state if state is not None else CycleState()
        found = self._find_feasible(state, pod, table)
        if isinstance(found, ScheduleResult):
            return found
        if not len(found.feasible):
            return self._unschedulable(state, pod, table, found.diagnosis, found.evaluated)
        return self._conclude(state, pod, table, found, explain, {})

    async def schedule_async(
        self, pod: PodInfo, table: NodeTable, state: CycleState | None = None, *, explain: bool = False
    ) -> ScheduleResult:
        """``schedule`` with the extenders: their filters after the filter plugins, their scores added.

        As kube-scheduler: each interested extender filters in turn what the previous left
        (an ignorable one's error skips it, another's fails the cycle); the nodes it rejects
        get its reason in the diagnosis; with one node left nothing scores; otherwise the
        prioritizers' scores (weighted, scaled to MaxNodeScore) add to the plugins' totals
        (a prioritizer's error only drops its scores). The HTTP calls are awaited before
        PreScore, so Score and the selection still run on the table as it is then.
        """
        state = state if state is not None else CycleState()
        found = self._find_feasible(state, pod, table)
        if isinstance(found, ScheduleResult):
            return found
        try:
            names = await self._run_extender_filters(pod, table, found)
            if found.nominated and not names:
                # The nominated node passed the plugins but not the extenders: try every node.
                again = self._run_filters(state, pod, table, try_nominated=False)
                found = again
                names = await self._run_extender_filters(pod, table, found)
        except ExtenderError as error:
            return ScheduleResult(Status.error(str(error)), diagnosis=found.diagnosis)
        extender_scores: dict[str, dict[str, int]] = {}
        if len(names) > 1 or (explain and names):
            extender_scores = await self._run_extender_prioritizers(pod, table, names)
        # The table may have changed while the extenders answered: find the nodes again by name.
        slots = [table.slot_of(name) for name in names]
        found.feasible = np.array([slot for slot in slots if slot is not None], dtype=np.intp)
        found.evaluated = len(found.feasible) + found.diagnosis.num_rejected
        if not len(found.feasible):
            return self._unschedulable(state, pod, table, found.diagnosis, found.evaluated)
        return self._conclude(state, pod, table, found, explain, extender_scores)

    async def _run_extender_filters(self, pod: PodInfo, table: NodeTable, found: _FilterPass) -> list[str]:
        """findNodesThatPassExtenders: the feasible nodes' names that every interested extender keeps."""
        names = [table.names[slot] for slot in found.feasible]
        before = len(names)
        diagnosis = found.diagnosis
        for extender in self.extenders:
            if not names:
                break
            if not extender.is_filter or not extender.is_interested(pod):
                continue
            try:
                result = await extender.filter(pod, table, names)
            except ExtenderError as error:
                if extender.ignorable:
                    log.info(
                        "skipping extender %s: it returned an error and is ignorable: %s",
                        extender.name,
                        error,
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

    async def _run_extender_prioritizers(
        self, pod: PodInfo, table: NodeTable, names: Sequence[str]
    ) -> dict[str, dict[str, int]]:
        """Extender -> node -> final score (score x weight x MaxNodeScore / MaxExtenderPriority)."""
        asking = [ext for ext in self.extenders if ext.is_prioritizer and ext.is_interested(pod)]
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

    def _find_feasible(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> ScheduleResult | _FilterPass:
        """PreFilter and Filter: the feasible nodes, or the cycle's end (an error, a PreFilter rejection)."""
        if table.num_nodes == 0:
            return ScheduleResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_NODES_AVAILABLE,)))
        status = self._run_pre_filter(state, pod, table)
        if status.code == Code.ERROR:
            return ScheduleResult(status)
        if status.is_rejected:
            diagnosis = Diagnosis(
                table.num_nodes,
                absent_status=status,
                pre_filter_message=status.message,
                unschedulable_plugins={status.plugin},
            )
            return self._unschedulable(state, pod, table, diagnosis, evaluated=0)
        try:
            return self._run_filters(state, pod, table)
        except FilterError as error:
            return ScheduleResult(Status.error(str(error)))

    def _conclude(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        found: _FilterPass,
        explain: bool,
        extender_scores: Mapping[str, Mapping[str, int]],
    ) -> ScheduleResult:
        """Score the feasible nodes (plugins, plus the extenders' scores by node) and pick one."""
        try:
            selected, explanation = self._select(state, pod, table, found.feasible, explain, extender_scores)
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

    def _run_pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        """Every PreFilter, in order; an unresolvable rejection stops at once, a resolvable one at the end."""
        rejection = SUCCESS
        for plugin in self.pre_filter_plugins:
            status = plugin.pre_filter(state, pod, table)
            if status.is_skip:
                state.skip_filter_plugins.add(plugin.name)
            elif status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return status.with_plugin(plugin.name)
            elif status.code == Code.UNSCHEDULABLE:
                rejection = status.with_plugin(plugin.name)
            elif not status.is_success:
                return Status.error(
                    f"running PreFilter plugin {plugin.name!r}: {status.message}"
                ).with_plugin(plugin.name)
        return rejection

    def _run_filters(
        self, state: CycleState, pod: PodInfo, table: NodeTable, *, try_nominated: bool = True
    ) -> _FilterPass:
        """Filter every node (vectorised), counting nominated pods of equal or higher priority.

        As kube-scheduler: a pod that preemption nominated to a node tries that node first
        and takes it if it fits there; a node where other pods of at least this pod's
        priority are nominated fits only if the filters pass both with those pods counted
        on it and without them (RunFilterPluginsWithNominatedPods). Nodes without
        nominations (nearly all) take the vectorised path only.
        """
        nominated = self._nominated_pods_by_slot(pod, table)
        own_node = self.handle.nominator.node_of(pod.uid) if try_nominated else None
        if own_node is not None:
            own_slot = table.slot_of(own_node)
            if own_slot is not None:
                own_status = self._filter_node(state, pod, table, own_slot, nominated.get(own_slot, ()))
                if own_status.is_success:
                    own = np.array([own_slot], dtype=np.intp)
                    return _FilterPass(own, 1, lambda: Diagnosis(table.num_nodes), nominated=True)
        active = table.node_order()
        count = len(active)
        start = self._next_start_index % count
        candidates = np.concatenate([active[start:], active[:start]])
        wanted = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, count)
        rejected_by, unresolvable, rejections, overrides = self._filter_in_order(
            state, pod, table, candidates, nominated, wanted
        )
        feasible = np.flatnonzero(rejected_by < 0)
        processed = count
        if len(feasible) > wanted:
            feasible = feasible[:wanted]
            processed = int(feasible[-1]) + 1
        self._next_start_index = (start + processed) % count
        rejected = rejected_by[:processed]

        def diagnose() -> Diagnosis:
            return self._diagnosis(table, candidates, rejected, unresolvable, rejections, overrides)

        evaluated = len(feasible) + int(np.count_nonzero(rejected >= 0))
        return _FilterPass(candidates[feasible], evaluated, diagnose)

    def _filter_in_order(
        self,
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
        for begin, end in ((0, first), (first, len(candidates))):
            if begin == end or feasible > wanted:
                break
            batch = candidates[begin:end]
            rejected_by, unresolvable, found = self._filter_pass(state, pod, table, batch)
            for position, status in self._with_nominated_pods(state, pod, table, batch, nominated).items():
                rejected_by[position] = len(self.filter_plugins)  # rejected: the status is in overrides
                overrides[position + begin] = status
            parts.append((rejected_by, unresolvable))
            rejections += [(positions + begin, reason) for positions, reason in found]
            feasible += int(np.count_nonzero(rejected_by < 0))
        rejected_by = np.concatenate([rejected for rejected, _ in parts])
        unresolvable = np.concatenate([flags for _, flags in parts])
        return rejected_by, unresolvable, rejections, overrides

    def _filter_pass(
        self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots
    ) -> tuple[IntArray, BoolArray, list[tuple[Slots, str]]]:
        """Every Filter over the candidates at once: per candidate the index of the first plugin
        that rejected it (-1: none) and whether unresolvably, and each rejection's positions."""
        count = len(candidates)
        rejected_by = np.full(count, -1, dtype=np.int64)
        unresolvable = np.zeros(count, dtype=np.bool_)
        rejections: list[tuple[Slots, str]] = []
        positions: Slots | None = None  # not yet rejected; None while that is all (no gather needed)
        for index, plugin in enumerate(self.filter_plugins):
            if plugin.name in state.skip_filter_plugins:
                continue
            remaining = candidates if positions is None else candidates[positions]
            if not len(remaining):
                break
            rejected_here = False
            for rejection in plugin.filter(state, pod, table, remaining):
                mask = np.asarray(rejection.mask, dtype=np.bool_)
                hit = np.flatnonzero(mask) if positions is None else positions[mask]
                if len(hit):
                    rejected_by[hit] = index
                    unresolvable[hit] |= rejection.unresolvable
                    rejections.append((hit, rejection.reason))
                    rejected_here = True
            if rejected_here:
                positions = np.flatnonzero(rejected_by < 0)
        return rejected_by, unresolvable, rejections

    def filters_read_totals_only(self, state: CycleState) -> bool:
        """Whether no Filter that runs for the cycle of ``state`` reads which pods are on a node,
        only the node totals: a what-if can then move pods in the totals alone (``PodMoves``)."""
        skipped = state.skip_filter_plugins
        return not any(plugin.reads_node_pods for plugin in self.filter_plugins if plugin.name not in skipped)

    def pre_filter_reads(self, pod: PodInfo) -> PodPredicate:
        """Whether adding or removing a pod may change PreFilter's output for ``pod`` (a plugin reads it)."""
        checks: list[PodPredicate] = []
        for plugin in self.pre_filter_plugins:
            reads = plugin.pods_read(pod)
            if reads is None:
                return _reads_any_pod
            if reads is not reads_no_pod:
                checks.append(reads)
        if not checks:
            return reads_no_pod
        if len(checks) == 1:
            return checks[0]
        return lambda other: any(check(other) for check in checks)

    def run_filters_with_nominated_pods(
        self,
        pod: PodInfo,
        table: NodeTable,
        slot: int,
        state: CycleState | None = None,
        reads: Callable[[PodInfo], bool] | None = None,
    ) -> Status:
        """Whether ``pod`` fits the node in ``slot`` of the table as it is now.

        For preemption's dry run, which removes and re-adds pods on the node. ``state`` is
        PreFilter's output if it still holds for the table as it is now (the caller knows
        the pods it moved are none that PreFilter reads); None runs PreFilter again in a
        fresh CycleState (PodTopologySpread and InterPodAffinity precompute from the pods
        on the table). The node's nominated pods count as in ``_run_filters``; ``reads``
        says which pods PreFilter reads, so that adding nominated pods it does not read
        reuses ``state`` too (None: it may read any).
        """
        nominated = self._nominated_pods_by_slot(pod, table, [slot]).get(slot, [])
        return self._filter_node(state, pod, table, slot, nominated, reads)

    def _nominated_pods_by_slot(
        self, pod: PodInfo, table: NodeTable, slots: Sequence[int] | None = None
    ) -> dict[int, list[PodInfo]]:
        """Slot -> the pods nominated there that ``pod`` must leave room for, over every node or
        only over ``slots``: those of equal or higher priority, except ``pod`` itself and pods the
        table already counts (assumed or bound since: counting them twice would reject good nodes)."""
        by_node = self.handle.nominator.by_node()
        if not by_node:
            return {}
        places: Iterable[tuple[int | None, Mapping[str, PodInfo] | None]]
        if slots is None or len(by_node) < len(slots):
            places = ((table.slot_of(node), pods) for node, pods in by_node.items())
            if slots is not None:  # the usual case: a few nominations, a dry run's hundreds of nodes
                asked = set(slots)
                places = ((slot, pods) for slot, pods in places if slot in asked)
        else:
            places = ((slot, by_node.get(table.names[slot])) for slot in slots)
        priority, uid, key, placed = pod.priority, pod.uid, pod.key, table.pod_keys
        by_slot: dict[int, list[PodInfo]] = {}
        for slot, pods in places:
            if slot is None or not pods:
                continue
            kept = [
                other
                for other in pods.values()
                if other.priority >= priority
                and other.uid != uid
                and other.key != key
                and other.key not in placed
            ]
            if kept:
                by_slot[slot] = kept
        return by_slot

    def _with_nominated_pods(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        candidates: Slots,
        nominated: Mapping[int, list[PodInfo]],
    ) -> dict[int, Status]:
        """Candidate position -> the status of nodes that do not fit once their nominated pods count.

        Only nodes with nominated pods are filtered again; the vectorised pass already
        filtered every node without them (the second of upstream's two passes).
        """
        if not nominated:
            return {}
        position_of = np.full(table.capacity, -1, dtype=np.int64)
        position_of[candidates] = np.arange(len(candidates))
        among = {slot: pods for slot, pods in nominated.items() if position_of[slot] >= 0}
        statuses = self._filter_with_nominated(state, pod, table, among, self.pre_filter_reads(pod))
        return {int(position_of[slot]): status for slot, status in statuses.items()}

    def run_filters_on_nodes(
        self, pod: PodInfo, table: NodeTable, slots: Sequence[int], state: CycleState, reads: PodPredicate
    ) -> dict[int, Status]:
        """Slot -> status of each node in ``slots`` that ``pod`` does not fit as the table is now.

        ``run_filters_with_nominated_pods`` for many nodes at once (preemption's dry run asks
        hundreds): ``state`` must hold for the table as it is now, ``reads`` says which pods
        PreFilter reads. The nodes with nominated pods are filtered with them counted first;
        those that pass, and every other node, then in one pass as they are (upstream's two
        passes), each node's filters seeing only its own pods.
        """
        nominated = self._nominated_pods_by_slot(pod, table, slots)
        statuses = self._filter_with_nominated(state, pod, table, nominated, reads)
        rest = np.fromiter((slot for slot in slots if slot not in statuses), dtype=np.intp)
        if len(rest):
            statuses.update(self._filter_together(state, pod, table, rest))
        return statuses

    def _filter_with_nominated(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        nominated: Mapping[int, list[PodInfo]],
        reads: PodPredicate,
    ) -> dict[int, Status]:
        """Slot -> status of the nodes that do not fit with their nominated pods added (upstream's
        first pass). Nodes whose nominated pods PreFilter does not read are filtered together,
        with all of them on the table at once (each node's filters then see only its own pods);
        the others one by one, PreFilter run again with their pods."""
        statuses: dict[int, Status] = {}
        together: dict[int, list[PodInfo]] = {}
        for slot, pods in nominated.items():
            if any(map(reads, pods)):
                status = self._filter_with_pods(pod, table, slot, pods)
                if not status.is_success:
                    statuses[slot] = status
            else:
                together[slot] = pods
        if together:
            slots = np.fromiter(together, dtype=np.intp, count=len(together))
            statuses.update(self._filter_together(state, pod, table, slots, together))
        return statuses

    def _filter_together(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        slots: Slots,
        pods_by_slot: Mapping[int, Sequence[PodInfo]] | None = None,
    ) -> dict[int, Status]:
        """Slot -> status of the nodes that do not fit (with their ``pods_by_slot`` added), in one pass."""
        added = [(slot, other) for slot, pods in (pods_by_slot or {}).items() for other in pods]
        with PodMoves(table, totals_only=self.filters_read_totals_only(state)) as moves:
            moves.add(added)
            rejected_by, unresolvable, rejections = self._filter_pass(state, pod, table, slots)
            diagnosis = self._diagnosis(table, slots, rejected_by, unresolvable, rejections, {})
        rejected = diagnosis.rejected
        statuses = map(rejected.statuses.__getitem__, rejected.groups.tolist())
        return dict(zip(rejected.slots.tolist(), statuses, strict=True))

    def _filter_node(
        self,
        state: CycleState | None,
        pod: PodInfo,
        table: NodeTable,
        slot: int,
        nominated: Sequence[PodInfo],
        reads: Callable[[PodInfo], bool] | None = None,
    ) -> Status:
        """RunFilterPluginsWithNominatedPods on one node: with ``nominated`` counted, then without.

        ``state`` is PreFilter's output for the table as it is; None runs PreFilter again
        first. Adding the nominated pods runs PreFilter again, unless ``reads`` says
        PreFilter reads none of them.
        """
        if nominated:
            unread = state is not None and reads is not None and not any(map(reads, nominated))
            status = self._filter_with_pods(pod, table, slot, nominated, state if unread else None)
            if not status.is_success:
                return status
        if state is None:
            state = CycleState()
            status = self._run_pre_filter(state, pod, table)
            if not status.is_success:
                return status
        return self._filter_one(state, pod, table, slot)

    def _filter_with_pods(
        self,
        pod: PodInfo,
        table: NodeTable,
        slot: int,
        pods: Sequence[PodInfo],
        state: CycleState | None = None,
    ) -> Status:
        """Filter one node with ``pods`` added to it; PreFilter runs again unless ``state`` still holds.

        Upstream updates PreFilter's state with the plugins' AddPod extensions instead.
        """
        totals_only = state is not None and self.filters_read_totals_only(state)
        with PodMoves(table, totals_only=totals_only) as moves:
            moves.add((slot, other) for other in pods)
            status = SUCCESS
            if state is None:
                state = CycleState()
                status = self._run_pre_filter(state, pod, table)
            if status.is_success:
                status = self._filter_one(state, pod, table, slot)
        return status

    def _filter_one(self, state: CycleState, pod: PodInfo, table: NodeTable, slot: int) -> Status:
        """Every Filter on one node, stopping at the first that rejects it (RunFilterPlugins)."""
        candidates = np.array([slot], dtype=np.intp)
        for plugin in self.filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            reasons: list[str] = []
            unresolvable = False
            for rejection in plugin.filter(state, pod, table, candidates):
                if bool(np.asarray(rejection.mask, dtype=np.bool_)[0]):
                    reasons.append(rejection.reason)
                    unresolvable |= rejection.unresolvable
            if reasons:
                return Status.unschedulable(*reasons, unresolvable=unresolvable).with_plugin(plugin.name)
        return SUCCESS

    def _diagnosis(
        self,
        table: NodeTable,
        candidates: Slots,
        rejected_by: IntArray,
        unresolvable: BoolArray,
        rejections: Sequence[tuple[Slots, str]],
        overrides: Mapping[int, Status],
    ) -> Diagnosis:
        """Each evaluated, rejected node's status; nodes rejected alike share one Status.

        A node's reasons are the rejections (in the order the filters gave them) that hit it,
        written as a bit set per node, so that grouping thousands of nodes is a few numpy calls.
        """
        diagnosis = Diagnosis(table.num_nodes)
        positions = np.flatnonzero(rejected_by >= 0)
        if not len(positions):
            return diagnosis
        bits = np.zeros((len(rejected_by), max(1, (len(rejections) + 62) // 63)), dtype=np.int64)
        for number, (hit, _reason) in enumerate(rejections):
            bits[hit[hit < len(rejected_by)], number // 63] |= 1 << (number % 63)
        keys = np.column_stack([rejected_by[positions], unresolvable[positions], bits[positions]])
        if len(rejections) <= 40 and len(self.filter_plugins) < 1024:  # one integer per node: a 1-D unique
            packed = (keys[:, 0] * 2 + keys[:, 1]) << len(rejections) | keys[:, 2]
            _values, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
            unique = keys[first]
        else:
            unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        statuses: list[Status] = []
        group_of_key = np.full(len(unique), -1, dtype=np.int64)  # -1: rejected with its nominated pods
        for key, (plugin_index, is_unresolvable, *words) in enumerate(unique.tolist()):
            if plugin_index >= len(self.filter_plugins):  # the status is in overrides
                continue
            reasons = [
                reason
                for number, (_hit, reason) in enumerate(rejections)
                if words[number // 63] >> (number % 63) & 1
            ]
            plugin = self.filter_plugins[plugin_index].name
            group_of_key[key] = len(statuses)
            statuses.append(
                Status.unschedulable(*reasons, unresolvable=bool(is_unresolvable)).with_plugin(plugin)
            )
            diagnosis.unschedulable_plugins.add(plugin)
        groups = group_of_key[inverse.ravel()]
        for index in np.flatnonzero(groups < 0).tolist():  # nodes rejected with their nominated pods
            groups[index] = len(statuses)
            statuses.append(found := overrides[int(positions[index])])
            diagnosis.unschedulable_plugins.add(found.plugin)
        diagnosis.rejected = RejectedNodes(candidates[positions], groups, statuses, table.names.copy())
        return diagnosis

    def _unschedulable(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis, evaluated: int
    ) -> ScheduleResult:
        """Run PostFilter (preemption may nominate a node) and report the FitError."""
        messages: list[str] = []
        nominated: str | None = None
        for plugin in self.post_filter_plugins:
            status, nominated_node = plugin.post_filter(state, pod, table, diagnosis)
            if status.is_success:
                nominated = nominated_node
                messages = list(status.reasons)
                break
            if not status.is_rejected:
                message = f"running PostFilter plugin {plugin.name!r}: {status.message}"
                return ScheduleResult(Status.error(message).with_plugin(plugin.name), diagnosis=diagnosis)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                nominated = nominated_node
                messages = list(status.reasons)
                break
            if nominated_node is not None:
                nominated = nominated_node
            messages.extend(status.reasons)
        diagnosis.post_filter_message = ", ".join(messages)
        return ScheduleResult(
            Status.unschedulable(diagnosis.message()),
            evaluated_nodes=evaluated,
            diagnosis=diagnosis,
            nominated_node=self._nominate(pod, nominated),
        )

    def _nominate(self, pod: PodInfo, node: str | None) -> str | None:
        """Apply PostFilter's nomination in memory now, so the next cycle already keeps the room
        (kube-scheduler's AddNominatedPod); the nomination to write on the pod if it changed."""
        if node is None:
            return None
        nominator = self.handle.nominator
        had = nominator.node_of(pod.uid) or (pod.obj.get("status") or {}).get("nominatedNodeName") or ""
        if node:
            nominator.add(pod, node)
        else:
            nominator.remove(pod.uid)
        return node if node != had else None

    def _select(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        feasible: Slots,
        explain: bool,
        extender_scores: Mapping[str, Mapping[str, int]] | None = None,
    ) -> tuple[int, Explanation | None]:
        if len(feasible) == 1 and not explain:
            return int(feasible[0]), None
        totals, explanation = self._prioritize(state, pod, table, feasible, explain, extender_scores or {})
        best = np.flatnonzero(totals == totals.max())
        return int(feasible[best[self._rng.randrange(len(best))]]), explanation

    def _prioritize(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        nodes: Slots,
        explain: bool,
        extender_scores: Mapping[str, Mapping[str, int]],
    ) -> tuple[IntArray, Explanation | None]:
        for pre_score in self.pre_score_plugins:
            status = pre_score.pre_score(state, pod, table, nodes)
            if status.is_skip:
                state.skip_score_plugins.add(pre_score.name)
            elif not status.is_success:
                message = f"running PreScore plugin {pre_score.name!r}: {status.message}"
                raise _CycleError(Status.error(message).with_plugin(pre_score.name))
        totals = np.zeros(len(nodes), dtype=np.int64)
        explained: list[PluginScores] = []
        for plugin in self.score_plugins:
            weight = self.score_weights[plugin.name]
            if plugin.name in state.skip_score_plugins:
                if explain:
                    zeros = np.zeros(len(nodes), dtype=np.int64)
                    explained.append(PluginScores(plugin.name, weight, zeros, zeros, skipped=True))
                continue
            raw = np.asarray(plugin.score(state, pod, table, nodes), dtype=np.int64)
            # Normalize may work in place: the raw scores are kept apart only to be explained.
            given = raw.copy() if explain else raw
            normalized = np.asarray(plugin.normalize(state, pod, given), dtype=np.int64)
            if len(normalized) and (normalized.min() < MIN_NODE_SCORE or normalized.max() > MAX_NODE_SCORE):
                out_of_range = normalized[(normalized < MIN_NODE_SCORE) | (normalized > MAX_NODE_SCORE)]
                message = (
                    f"plugin {plugin.name!r} returns an invalid score {int(out_of_range[0])}, "
                    f"it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
                raise _CycleError(Status.error(message).with_plugin(plugin.name))
            totals += normalized * weight
            if explain:
                explained.append(PluginScores(plugin.name, weight, raw, normalized))
        for extender, by_node in extender_scores.items():
            final = np.array([by_node.get(table.names[slot], 0) for slot in nodes.tolist()], dtype=np.int64)
            totals += final
            if explain:
                explained.append(PluginScores(f"extender {extender}", 1, final, final))
        if not explain:
            return totals, None
        names = tuple(table.names[slot] for slot in nodes)
        return totals, Explanation(names, tuple(explained), totals)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Reserve plugins, after the runtime assumed the pod on the node; on failure call ``unreserve``."""
        for plugin in self.reserve_plugins:
            status = plugin.reserve(state, pod, node_name)
            if not status.is_success:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Undo ``reserve`` in reverse order, when any later step fails."""
        for plugin in reversed(self.reserve_plugins):
            plugin.unreserve(state, pod, node_name)

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> PermitResult:
        timeouts: dict[str, float] = {}
        for plugin in self.permit_plugins:
            status, timeout = plugin.permit(state, pod, node_name)
            if status.code == Code.WAIT:
                timeouts[plugin.name] = min(timeout, MAX_PERMIT_TIMEOUT)
            elif not status.is_success:
                return PermitResult(status.with_plugin(plugin.name))
        if timeouts:
            return PermitResult(Status(Code.WAIT), timeouts)
        return PermitResult(SUCCESS)

    async def bind_cycle(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """PreBind, then Bind and PostBind (``pre_bind`` then ``bind``); the caller unreserves on failure."""
        status = await self.pre_bind(state, pod, node_name)
        return await self.bind(state, pod, node_name) if status.is_success else status

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """PreBind plugins in order (they may wait long: VolumeBinding waits for volumes to bind).

        An error reads as kube-scheduler's (``running PreBind plugin "X": ...``); a rejection
        keeps the plugin's own message.
        """
        for plugin in self.pre_bind_plugins:
            status = await plugin.pre_bind(state, pod, node_name)
            if not status.is_success:
                return _named_failure(status, "PreBind", plugin.name)
        return SUCCESS

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """The binder extender (if interested), else the first bind plugin not returning Skip; then PostBind.

        As kube-scheduler's extendersBinding: an ignorable extender's error falls through to
        the next binder; another's fails the binding.
        """
        for extender in self.extenders:
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
            self._post_bind(state, pod, node_name)
            return SUCCESS
        for plugin in self.bind_plugins:
            status = await plugin.bind(state, pod, node_name)
            if status.is_skip:
                continue
            if not status.is_success:
                return _named_failure(status, "Bind", plugin.name)
            self._post_bind(state, pod, node_name)
            return SUCCESS
        return Status.error(f"profile {self.scheduler_name!r}: no bind plugin bound pod {pod.key}")

    def _post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for post_bind in self.post_bind_plugins:
            post_bind.post_bind(state, pod, node_name)


def _named_failure(status: Status, point: str, plugin: str) -> Status:
    if status.is_rejected:
        return status.with_plugin(plugin)
    return Status.error(f'running {point} plugin "{plugin}": {status.message}').with_plugin(plugin)
