"""``Framework``: one profile's plugins, and running them at each extension point.

This is kube-scheduler's framework runtime (``framework/runtime/framework.go``): it builds the
profile's plugins from the registry and runs them, one ``run_*_plugins`` method per extension
point, with upstream's rules for Skip, rejections, errors, weights and score ranges. It holds
no scheduling algorithm: which nodes to filter, when to stop, how to pick the winner and how a
pod goes from the queue to its Binding is ``scheduler.schedule_one``; filtering with the pods
nominated to a node counted on it is ``framework.nominated_filter``.

Filters run vectorised: each filter plugin sees only the candidates every earlier filter
accepted, so a rejected node's reasons come from the first plugin that rejected it, as in
kube-scheduler.

A plugin's fault (an exception, or a result of the wrong shape) is that pod's Error status in
kube-scheduler's words (``running Score plugins: plugin "X" failed with: ...``): the scheduler
reports it on the pod and goes on with the next one. The traceback is logged at -v=4, once per
plugin, extension point and kind of fault, so a plugin failing for every pod does not flood the log.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.framework.diagnosis import Diagnosis, RejectedNodes
from secondary_scheduler.framework.events import ClusterEvent
from secondary_scheduler.framework.extender import Extender
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
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.profile import ExtensionPoint, ProfileLike
from secondary_scheduler.framework.result import PluginScores
from secondary_scheduler.framework.scores import MAX_NODE_SCORE, MIN_NODE_SCORE
from secondary_scheduler.framework.status import SUCCESS, Code, Status

MAX_PERMIT_TIMEOUT = 15 * 60.0

log = logging.getLogger(__name__)

_Kind = TypeVar("_Kind", bound=Plugin)

FilterOutcome = tuple[IntArray, BoolArray, list[tuple[Slots, str]]]
"""What ``run_filter_plugins`` found, per candidate: the index of the first filter plugin that
rejected it (-1: none) and whether unresolvably; and each rejection's positions and reason."""


@dataclass(frozen=True)
class PermitResult:
    status: Status
    """Success, Wait (the runtime holds the pod) or a rejection/error."""
    timeouts: Mapping[str, float] = field(default_factory=dict)
    """Plugin -> seconds to wait for it, when the status is Wait."""


def _reads_any_pod(other: PodInfo) -> bool:
    return True


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
        score next to the score plugins and bind before the bind plugins (``scheduler.schedule_one``
        calls them; preemption reads them too, as upstream's ``Framework.Extenders``).
        ``rng`` breaks ties between the best nodes (seeded for a reproducible answer).
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
        self.rng = rng or random.Random()
        self.next_start_index = 0
        """Where the next cycle's filter search starts, in the table's node order: the scheduling
        algorithm resumes where the previous cycle of this profile stopped (upstream keeps this
        beside its algorithm; here each profile, and each ``secsched score`` run, has its own)."""
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
        self._logged_faults: set[tuple[str, str, str]] = set()
        self._registrations = {name: plugin.events_to_register() for name, plugin in self._instances.items()}
        """Plugin -> the cluster events that can undo its rejections (None: any), asked once."""
        if len(self.queue_sort_plugins) > 1:
            raise ValueError(f"profile {profile.scheduler_name!r}: only one queueSort plugin may be enabled")

    @property
    def scheduler_name(self) -> str:
        return self.profile.scheduler_name

    def _fault(self, point: str, plugin: str, error: Exception) -> str:
        """A plugin's exception in words; its traceback logged (at -v=4) the first time this
        plugin fails this way at this point."""
        key = (point, plugin, type(error).__name__)
        if key not in self._logged_faults:
            self._logged_faults.add(key)
            log.debug("plugin %s failed at %s (logged once)", plugin, point, exc_info=error)
        return _describe(error)

    def _status_of(self, point: str, plugin: str, result: Any) -> Status:
        """A plugin's Status, or an Error if it returned something else."""
        if isinstance(result, Status):
            return result
        return Status.error(_wrong_result(point, plugin, result, "a Status"))

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
                # Named as kube-scheduler's profile.NewMap and NewFramework name it.
                where = (
                    f'creating profile for scheduler name {self.scheduler_name}: initializing plugin "{name}"'
                )
                try:
                    args = validated_args(plugin_class, self.profile.plugin_args.get(name))
                    plugin = plugin_class(args, self.handle)
                except ValueError as error:  # the plugin refuses its args or environment: its words
                    raise ValueError(f"{where}: {error}") from error
                except Exception as error:
                    log.debug("initializing plugin %s", name, exc_info=error)
                    raise ValueError(f"{where}: {_describe(error)}") from error
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
            try:
                status = self._status_of("PreEnqueue", plugin.name, plugin.pre_enqueue(pod))
            except Exception as error:
                status = Status.error(self._fault("PreEnqueue", plugin.name, error))
            if status.code == Code.ERROR:
                message = f'running PreEnqueue plugin "{plugin.name}": {status.message}'
                return Status.error(message).with_plugin(plugin.name)
            if not status.is_success:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if not self.queue_sort_plugins:
            raise RuntimeError(f"profile {self.scheduler_name!r} has no queueSort plugin")
        return self.queue_sort_plugins[0].less(a, b)

    # -- PreFilter and Filter ---------------------------------------------------------------
    def run_pre_filter_plugins(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        """Every PreFilter, in order; an unresolvable rejection stops at once, a resolvable one at the end.

        The node names PreFilter plugins return (``PreFilterResult``) are intersected into
        ``state.pre_filter_nodes``; an empty intersection rejects the pod at once, unresolvably,
        in upstream's words (RunPreFilterPlugins).
        """
        rejection = SUCCESS
        for plugin in self.pre_filter_plugins:
            try:
                result = plugin.pre_filter(state, pod, table)
            except Exception as error:
                result = Status.error(self._fault("PreFilter", plugin.name, error))
            if isinstance(result, PreFilterResult):  # a success that narrows the nodes
                allowed = state.pre_filter_nodes
                state.pre_filter_nodes = result.node_names if allowed is None else allowed & result.node_names
                state.pre_filter_narrowed_by |= {plugin.name}
                if not state.pre_filter_nodes:
                    message = _no_node_left(state.pre_filter_narrowed_by)
                    return Status.unschedulable(message, unresolvable=True)
                continue
            status = self._status_of("PreFilter", plugin.name, result)
            if status.is_skip:
                state.skip_filter_plugins.add(plugin.name)
            elif status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return status.with_plugin(plugin.name)
            elif status.code == Code.UNSCHEDULABLE:
                rejection = status.with_plugin(plugin.name)
            elif not status.is_success:
                return Status.error(
                    f'running PreFilter plugin "{plugin.name}": {status.message}'
                ).with_plugin(plugin.name)
        return rejection

    def run_filter_plugins(
        self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots
    ) -> FilterOutcome:
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
            for mask, reason, is_unresolvable in self._rejections(plugin, state, pod, table, remaining):
                hit = np.flatnonzero(mask) if positions is None else positions[mask]
                if len(hit):
                    rejected_by[hit] = index
                    unresolvable[hit] |= is_unresolvable
                    rejections.append((hit, reason))
                    rejected_here = True
            if rejected_here:
                positions = np.flatnonzero(rejected_by < 0)
        return rejected_by, unresolvable, rejections

    def run_filter_plugins_on_node(
        self, state: CycleState, pod: PodInfo, table: NodeTable, slot: int
    ) -> Status:
        """Every Filter on one node, stopping at the first that rejects it (RunFilterPlugins)."""
        candidates = np.array([slot], dtype=np.intp)
        for plugin in self.filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            reasons: list[str] = []
            unresolvable = False
            try:
                found = self._rejections(plugin, state, pod, table, candidates)
            except FilterError as error:
                return Status.error(str(error)).with_plugin(plugin.name)
            for mask, reason, is_unresolvable in found:
                if bool(mask[0]):
                    reasons.append(reason)
                    unresolvable |= is_unresolvable
            if reasons:
                return Status.unschedulable(*reasons, unresolvable=unresolvable).with_plugin(plugin.name)
        return SUCCESS

    def _rejections(
        self, plugin: FilterPlugin, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots
    ) -> list[tuple[BoolArray, str, bool]]:
        """The plugin's rejections as (mask, reason, unresolvable), each checked; a fault is a
        FilterError reading `running "X" filter plugin: ...` (a FilterError of its own passes as is)."""
        found = []
        try:
            for rejection in plugin.filter(state, pod, table, candidates):
                mask = np.asarray(rejection.mask, dtype=np.bool_)
                if mask.shape != (len(candidates),) or not isinstance(rejection.reason, str):
                    raise FilterError(
                        f'running "{plugin.name}" filter plugin: '
                        + _wrong_result(
                            "Filter",
                            plugin.name,
                            rejection,
                            f"Rejections with a mask of {len(candidates)} nodes",
                        )
                    )
                found.append((mask, rejection.reason, bool(rejection.unresolvable)))
        except FilterError:
            raise
        except Exception as error:
            fault = self._fault("Filter", plugin.name, error)
            raise FilterError(f'running "{plugin.name}" filter plugin: {fault}') from error
        return found

    def diagnose(
        self,
        table: NodeTable,
        candidates: Slots,
        rejected_by: IntArray,
        unresolvable: BoolArray,
        rejections: Sequence[tuple[Slots, str]],
        overrides: Mapping[int, Status],
    ) -> Diagnosis:
        """Each evaluated, rejected node's status, from ``run_filter_plugins``' outcome over
        ``candidates`` (``overrides``: candidate position -> status of a node rejected once its
        nominated pods counted, marked in ``rejected_by`` by an index past the filter plugins).

        Nodes rejected alike share one Status. A node's reasons are the rejections (in the
        order the filters gave them) that hit it, written as a bit set per node, so that
        grouping thousands of nodes is a few numpy calls.
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

    # -- PostFilter -------------------------------------------------------------------------
    def run_post_filter_plugins(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> tuple[Status, str | None]:
        """PostFilter plugins in order until one succeeds or rejects unresolvably (preemption).

        Returns an Error naming the plugin that failed, or a rejection whose reasons are the
        messages to report (the successful plugin's, or every plugin's), and the node nominated
        ("" takes a nomination back; None leaves it).
        """
        messages: list[str] = []
        nominated: str | None = None
        for plugin in self.post_filter_plugins:
            try:
                result = plugin.post_filter(state, pod, table, diagnosis)
                if not _pair_of(result, Status, str | None):
                    raise TypeError(
                        _wrong_result("PostFilter", plugin.name, result, "(Status, node name or None)")
                    )
                status, nominated_node = result
            except Exception as error:
                fault = self._fault("PostFilter", plugin.name, error)
                message = f'running PostFilter plugin "{plugin.name}": {fault}'
                return Status.error(message).with_plugin(plugin.name), None
            if status.is_success:
                return Status.unschedulable(*status.reasons), nominated_node
            if not status.is_rejected:
                message = f'running PostFilter plugin "{plugin.name}": {status.message}'
                return Status.error(message).with_plugin(plugin.name), None
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return Status.unschedulable(*status.reasons), nominated_node
            if nominated_node is not None:
                nominated = nominated_node
            messages.extend(status.reasons)
        return Status.unschedulable(*messages), nominated

    # -- PreScore, Score, NormalizeScore ------------------------------------------------------
    def run_pre_score_plugins(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots
    ) -> Status:
        """Every PreScore; Skip skips the plugin's Score for this cycle, anything else fails it."""
        for pre_score in self.pre_score_plugins:
            try:
                status = self._status_of(
                    "PreScore", pre_score.name, pre_score.pre_score(state, pod, table, nodes)
                )
            except Exception as error:
                status = Status.error(self._fault("PreScore", pre_score.name, error))
            if status.is_skip:
                state.skip_score_plugins.add(pre_score.name)
            elif not status.is_success:
                message = f'running PreScore plugin "{pre_score.name}": {status.message}'
                return Status.error(message).with_plugin(pre_score.name)
        return SUCCESS

    def run_score_plugins(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        nodes: Slots,
        explained: list[PluginScores] | None = None,
    ) -> tuple[IntArray, Status]:
        """Score, NormalizeScore and weights: each node's weighted total over the score plugins.

        An Error when a plugin's normalized score leaves [MinNodeScore, MaxNodeScore].
        ``explained``, when given, receives every plugin's raw and normalized scores.
        """
        totals = np.zeros(len(nodes), dtype=np.int64)
        explain = explained is not None
        for plugin in self.score_plugins:
            weight = self.score_weights[plugin.name]
            if plugin.name in state.skip_score_plugins:
                if explained is not None:
                    zeros = np.zeros(len(nodes), dtype=np.int64)
                    explained.append(PluginScores(plugin.name, weight, zeros, zeros, skipped=True))
                continue
            try:
                raw = self._scores("Score", plugin.name, plugin.score(state, pod, table, nodes), len(nodes))
            except Exception as error:
                fault = self._fault("Score", plugin.name, error)
                message = f'running Score plugins: plugin "{plugin.name}" failed with: {fault}'
                return totals, Status.error(message).with_plugin(plugin.name)
            # Normalize may work in place: the raw scores are kept apart only to be explained.
            given = raw.copy() if explain else raw
            try:
                normalized = self._scores(
                    "NormalizeScore", plugin.name, plugin.normalize(state, pod, given), len(nodes)
                )
            except Exception as error:
                fault = self._fault("NormalizeScore", plugin.name, error)
                message = f'running Normalize on Score plugins: plugin "{plugin.name}" failed with: {fault}'
                return totals, Status.error(message).with_plugin(plugin.name)
            if len(normalized) and (normalized.min() < MIN_NODE_SCORE or normalized.max() > MAX_NODE_SCORE):
                out_of_range = normalized[(normalized < MIN_NODE_SCORE) | (normalized > MAX_NODE_SCORE)]
                message = (
                    f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" returns an '
                    f"invalid score {int(out_of_range[0])}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
                return totals, Status.error(message).with_plugin(plugin.name)
            totals += normalized * weight
            if explained is not None:
                explained.append(PluginScores(plugin.name, weight, raw, normalized))
        return totals, SUCCESS

    @staticmethod
    def _scores(point: str, plugin: str, result: Any, count: int) -> IntArray:
        """A Score or NormalizeScore result: one integer per node, or a TypeError saying what came."""
        try:
            scores = np.asarray(result, dtype=np.int64)
        except (TypeError, ValueError, OverflowError) as error:
            raise TypeError(_wrong_result(point, plugin, result, f"{count} integer scores")) from error
        if scores.shape != (count,):
            raise TypeError(_wrong_result(point, plugin, result, f"{count} integer scores"))
        return scores

    # -- Reserve, Permit ----------------------------------------------------------------------
    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Reserve plugins, once the pod is assumed on its node; a failure is undone by the unreserve."""
        for plugin in self.reserve_plugins:
            try:
                status = self._status_of("Reserve", plugin.name, plugin.reserve(state, pod, node_name))
            except Exception as error:
                status = Status.error(self._fault("Reserve", plugin.name, error))
            if not status.is_success:
                return _named_failure(status, "Reserve", plugin.name)
        return SUCCESS

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Undo Reserve in reverse order, when any later step fails."""
        for plugin in reversed(self.reserve_plugins):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception as error:  # nothing to report it on: log it, and undo the others still
                log.error(
                    'running Unreserve plugin "%s" for pod %s: %s',
                    plugin.name,
                    pod.key,
                    self._fault("Unreserve", plugin.name, error),
                )

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> PermitResult:
        """Every Permit; a rejection stops them, a Wait is collected with its (capped) timeout."""
        timeouts: dict[str, float] = {}
        for plugin in self.permit_plugins:
            try:
                result = plugin.permit(state, pod, node_name)
                if not _pair_of(result, Status, int | float):
                    raise TypeError(
                        _wrong_result("Permit", plugin.name, result, "(Status, timeout in seconds)")
                    )
                status, timeout = result
            except Exception as error:
                message = (
                    f'running Permit plugin "{plugin.name}": {self._fault("Permit", plugin.name, error)}'
                )
                return PermitResult(Status.error(message).with_plugin(plugin.name))
            if status.code == Code.WAIT:
                timeouts[plugin.name] = min(timeout, MAX_PERMIT_TIMEOUT)
            elif not status.is_success:
                return PermitResult(_named_failure(status, "Permit", plugin.name))
        if timeouts:
            return PermitResult(Status(Code.WAIT), timeouts)
        return PermitResult(SUCCESS)

    # -- PreBind, Bind, PostBind ----------------------------------------------------------------
    async def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """PreBind plugins in order (they may wait long: VolumeBinding waits for volumes to bind).

        An error reads as kube-scheduler's (``running PreBind plugin "X": ...``); a rejection
        keeps the plugin's own message.
        """
        for plugin in self.pre_bind_plugins:
            try:
                status = self._status_of("PreBind", plugin.name, await plugin.pre_bind(state, pod, node_name))
            except Exception as error:
                status = Status.error(self._fault("PreBind", plugin.name, error))
            if not status.is_success:
                return _named_failure(status, "PreBind", plugin.name)
        return SUCCESS

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """The first bind plugin not returning Skip binds the pod (a binder extender came first)."""
        for plugin in self.bind_plugins:
            try:
                status = self._status_of("Bind", plugin.name, await plugin.bind(state, pod, node_name))
            except Exception as error:
                status = Status.error(self._fault("Bind", plugin.name, error))
            if status.is_skip:
                continue
            if not status.is_success:
                return _named_failure(status, "Bind", plugin.name)
            return SUCCESS
        return Status.error(f"profile {self.scheduler_name!r}: no bind plugin bound pod {pod.key}")

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for post_bind in self.post_bind_plugins:
            try:
                post_bind.post_bind(state, pod, node_name)
            except Exception as error:  # the pod is bound: log it, as upstream's PostBind returns nothing
                fault = self._fault("PostBind", post_bind.name, error)
                log.error('running PostBind plugin "%s" for pod %s: %s', post_bind.name, pod.key, fault)


def _no_node_left(plugins: frozenset[str]) -> str:
    """Upstream's words when the plugins' node names have nothing in common."""
    if len(plugins) == 1:
        return f"node(s) didn't satisfy plugin {next(iter(plugins))}"
    return f"node(s) didn't satisfy plugin(s) {_go_list(plugins)} simultaneously"


def not_in_pre_filter_result(plugins: frozenset[str]) -> Status:
    """The status of a node left out by the plugins' ``PreFilterResult`` (findNodesThatFitPod)."""
    return Status.unschedulable(f"node(s) didn't satisfy plugin(s) {_go_list(plugins)}", unresolvable=True)


def _go_list(names: set[str] | frozenset[str]) -> str:
    """Sorted names as Go prints a []string: ``[A B]``."""
    return "[" + " ".join(sorted(names)) + "]"


def _describe(error: BaseException) -> str:
    """An exception as one line: its type (a bare KeyError's text is only the key) and text."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _pair_of(result: Any, first: Any, second: Any) -> bool:
    """Whether ``result`` is a 2-tuple of those types (what PostFilter and Permit return)."""
    return (
        isinstance(result, tuple)
        and len(result) == 2
        and isinstance(result[0], first)
        and isinstance(result[1], second)
    )


def _wrong_result(point: str, plugin: str, result: Any, expected: str) -> str:
    shown = repr(result)
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return f'{point} of plugin "{plugin}" returned {type(result).__name__} {shown}, not {expected}'


def _named_failure(status: Status, point: str, plugin: str) -> Status:
    if status.is_rejected:
        return status.with_plugin(plugin)
    return Status.error(f'running {point} plugin "{plugin}": {status.message}').with_plugin(plugin)
