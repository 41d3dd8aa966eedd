"""LoadAwarePacking as a framework Score and Filter plugin over the NodeTable.

Per cycle it only works on arrays: the window peaks and seasonal rises are recomputed once per
snapshot (at the first cycle that sees it) and laid out per table slot (``slotloads``), the
in-flight pods are a NodeTable index summed with ``bincount``, and the pod's estimate is one
lookup; the scored nodes are gathered once (issue 38's cost target: docs/loadaware.md, "Cost").
See ``scoring`` for the shape of the score and docs/loadaware.md for why each part is there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, FilterPlugin, Rejection, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import CPU_COLUMN
from secondary_scheduler.plugins.loadawarepacking.args import LoadAwarePackingArgs
from secondary_scheduler.plugins.loadawarepacking.estimator import PodShape, UsageEstimator
from secondary_scheduler.plugins.loadawarepacking.events import DegradedMetricsEvents
from secondary_scheduler.plugins.loadawarepacking.history import NodeHistory
from secondary_scheduler.plugins.loadawarepacking.inflight import Baseline, InFlightPods, Window
from secondary_scheduler.plugins.loadawarepacking.notes import LoadAwareNote
from secondary_scheduler.plugins.loadawarepacking.occupancy import workload_pods
from secondary_scheduler.plugins.loadawarepacking.recentplacements import RecentPlacements
from secondary_scheduler.plugins.loadawarepacking.scoring import (
    Spill,
    over_threshold,
    score_balanced,
    score_packed,
    with_opening_cost,
)
from secondary_scheduler.plugins.loadawarepacking.slotloads import SlotLoads, SlotLoadsCache
from secondary_scheduler.plugins.loadawarepacking.telemetry import (
    NO_METRICS_ESTIMATED,
    NO_METRICS_UNSCORED,
    STALE_HELD,
    LoadAwareTelemetry,
)
from secondary_scheduler.plugins.trimaran.collector import Snapshot
from secondary_scheduler.plugins.trimaran.nodeusage import NodeUsage
from secondary_scheduler.plugins.trimaran.pluginbase import TrimaranPlugin
from secondary_scheduler.plugins.trimaran.resourcestats import safe_divide
from secondary_scheduler.plugins.trimaran.targetloadpacking.plugin import CapacityColumn

log = logging.getLogger(__name__)

_NO_NODES: Slots = np.zeros(0, dtype=np.intp)
"""The metric view is asked for no node's rows: the prediction reads the per-slot history."""
_NO_FLAGS: BoolArray = np.zeros(0, dtype=np.bool_)


@dataclass(frozen=True)
class Prediction:
    """One cycle's prediction for some nodes (aligned with them) and what it rested on."""

    percent: FloatArray
    unscored: BoolArray
    """Nodes without a reading and no fallback: scored 0, never filtered."""
    note: LoadAwareNote
    pod_millis: float
    divisor_by_slot: FloatArray
    """Each slot's capacity in millicores (infinity where unknown): the pod's own share of a node
    is ``100 * pod_millis / divisor``, read only for the few nodes a packed pod would push over."""
    nodes: Slots

    def over_without_pod(self, at: IntArray, target: float) -> BoolArray:
        """Of the nodes ``at`` (indices into ``nodes``), those over ``target`` before this pod."""
        share = 100.0 * self.pod_millis / self.divisor_by_slot[self.nodes[at]]
        return np.asarray(self.percent[at] - share > target)


class LoadAwarePacking(TrimaranPlugin, ScorePlugin, FilterPlugin):
    name: ClassVar[str] = "LoadAwarePacking"
    args_model = LoadAwarePackingArgs

    def __init__(self, args: LoadAwarePackingArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        self.clock = self.view.collector.clock
        self.telemetry = LoadAwareTelemetry.of(handle)
        self.estimator = UsageEstimator(args)
        self.history = NodeHistory(
            args.peak_percentile, args.peak_window, args.seasonal, args.seasonal_horizon
        )
        self._capacity = CapacityColumn()
        self._loads = SlotLoadsCache()
        self._capacity_at_record: FloatArray = np.zeros(0)
        self._recorded: Snapshot | None = None
        self._index_name = f"loadawarepacking/{id(self)}"
        self._warned_stale = False
        self._window: Window | None = None
        self._one_sample_source = False
        """The latest snapshot held one sample per node: every deviation 0, some node's mean above
        0 (a source that just started; a source of latest values only says the same, but its
        later windows hold no more data, and nothing is read again from them)."""
        degraded = self.telemetry.degraded_nodes
        self._stale_gauge = degraded.labels(self.name, STALE_HELD)
        self._estimated_gauge = degraded.labels(self.name, NO_METRICS_ESTIMATED)
        self._unscored_gauge = degraded.labels(self.name, NO_METRICS_UNSCORED)
        self._inflight_gauge = self.telemetry.inflight_pods.labels(self.name)
        self.events = DegradedMetricsEvents(handle, self.name)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """The Filter's rejections are undone by load leaving a node (a pod going) or a node coming."""
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)),
        )

    # -- extension points ---------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        threshold = self.args.hard_threshold
        if threshold is None:
            return []
        prediction = self.predict(pod, table, candidates)
        rejected = over_threshold(prediction.percent, threshold) & ~prediction.unscored
        if not rejected.any():
            return []
        reason = f"node(s) would exceed the CPU hardThreshold ({threshold}%) of {self.name}"
        return [Rejection(rejected, reason)]

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        prediction = self.predict(pod, table, nodes)
        target = float(self.args.target_utilization)
        if self._packs(pod):
            args = self.args
            crossing = np.flatnonzero(prediction.percent > target)  # few: only they are looked at
            hot = prediction.over_without_pod(crossing, target)
            spill = Spill(crossing, crossing[hot], float(args.spill_ceiling))
            scores = score_packed(prediction.percent, target, spill)
        else:  # packing on a guess of the pods' scale packs to an unknown: balance until a lesson
            empty = workload_pods(table).empty(nodes)
            percent = with_opening_cost(prediction.percent, empty, self.args.opening_cost, target)
            scores = score_balanced(percent, target)
        state.add_note(prediction.note)
        return np.where(prediction.unscored, 0, scores) if prediction.unscored.any() else scores

    def _packs(self, pod: PodInfo) -> bool:
        """PackToTarget once anything is learned; Adaptive for a pod of a steady class only."""
        strategy = self.args.scoring_strategy
        if strategy == "PackToTarget":
            return self.estimator.global_ratio is not None
        return strategy == "Adaptive" and self.estimator.steady(self.estimator.shape(pod))

    # -- the prediction -----------------------------------------------------------------------

    def predict(self, pod: PodInfo, table: NodeTable, nodes: Slots) -> Prediction:
        """Each node's predicted CPU peak (percent of capacity) with ``pod`` on it.

        What only a snapshot or a node changes is laid out per slot once (``SlotLoads``). A cycle
        works per slot up to the highest scored one, patches the few anchored slots and gathers
        the scored nodes once at the end: the same sums, in the same order, as adding every part
        per scored node (the decisions must not move with the layout).
        """
        usage = self.view.usage(table, _NO_NODES, self.policy)  # its snapshot and state, no rows
        self._record(table, usage)
        inflight = table.index(self._index_name, self._build_inflight)
        now = self.clock()
        loads = self._loads.of(self.history, self._capacity.of(table), table)
        upto = int(nodes.max(initial=-1)) + 1  # the slots worked on: every scored one
        anchored, baseline_peaks = inflight.anchored(now)
        args = self.args
        missing, margin = inflight.missing(now, args.burst_window, args.burst_margin, anchored, upto)
        shape = self.estimator.shape(pod)
        pod_millis = self.estimator.estimate_one(shape)
        # peak + rise + 100 * (missing + margin + pod) / capacity, per slot, in that order
        load = missing + margin
        load += pod_millis
        load *= 100.0
        load /= loads.divisor[:upto]
        scored = anchored < upto
        anchored, baseline_peaks = anchored[scored], baseline_peaks[scored]
        added_on_anchored = load[anchored]
        load += loads.base_percent[:upto]
        load[anchored] = loads.anchored_base(anchored, baseline_peaks) + added_on_anchored
        percent = load[nodes]
        # Nodes without a reading: loaded from their requests (estimated), or scored 0 (unscored).
        unmeasured = estimated = unscored = np.zeros(len(nodes), dtype=np.bool_)
        if not loads.all_measured:
            unmeasured = ~loads.measured[nodes]
        without = int(unmeasured.sum()) if not loads.all_measured else 0
        if without and self.policy.fallback:
            # Requests already hold every pod on the node, in flight or not: no missing share.
            estimated = unmeasured
            at = np.flatnonzero(unmeasured)
            capacity = loads.capacity[nodes[at]]
            requested = self._from_requests(table, nodes[at], capacity)
            added = safe_divide(100.0 * (margin[nodes[at]] + pod_millis), capacity, capacity > 0)
            percent[at] = np.where(capacity > 0, requested + 0.0 + added, 100.0 + added)
        elif without:
            unscored = unmeasured
        unscored_count = 0 if self.policy.fallback else without
        note = self._note(
            usage, table, nodes, pod_millis, shape, estimated, unscored, without, missing, loads, anchored
        )
        self._count(usage, len(nodes), without, unscored_count, len(inflight))
        self._tell(pod, usage, table, nodes, unmeasured, without, unscored_count)
        return Prediction(percent, unscored, note, pod_millis, loads.divisor, nodes)

    def _tell(
        self,
        pod: PodInfo,
        usage: NodeUsage,
        table: NodeTable,
        nodes: Slots,
        unmeasured: BoolArray,
        without: int,
        unscored: int,
    ) -> None:
        """The Warning Events of degraded metrics (once per episode; see ``events``)."""
        held = usage.stale and self.history.known
        self.events.stale(pod, held, usage.source, usage.age_seconds, self.policy.staleness_limit)
        if held or not without:
            self.events.missing(pod, (), 0, usage.source, "")
            return
        if unscored:
            instead = "scored 0 (fallbackToRequests: false)"
        else:
            factor = self.estimator.global_ratio or self.args.default_usage_factor
            instead = f"their load predicted from their pods' CPU requests x {factor:.2f}"
        names = [table.names[slot] for slot in nodes[unmeasured][:10].tolist()]
        self.events.missing(pod, names, without, usage.source, instead)

    def _from_requests(self, table: NodeTable, nodes: Slots, capacity: FloatArray) -> FloatArray:
        """Load of nodes without a reading: their pods' CPU requests x the learned use per request."""
        factor = self.estimator.global_ratio or self.args.default_usage_factor
        requested = table.requested[nodes, CPU_COLUMN].astype(np.float64) * factor
        return np.where(capacity > 0, 100.0 * requested / np.where(capacity > 0, capacity, 1.0), 0.0)

    def _build_inflight(self, table: NodeTable) -> InFlightPods:
        return InFlightPods(table, self.estimator, self.clock, self._baseline, self._window)

    def _build_recent(self, table: NodeTable) -> RecentPlacements:
        keep = self.args.seasonal_horizon + self.args.peak_window  # a forecast's pods, and its window
        return RecentPlacements(table, self.estimator, self.clock, keep)

    def _baseline(self, slot: int) -> Baseline | None:
        """The node's latest reading, the baseline a new group of pods placed on it starts from."""
        history = self.history
        if slot >= len(history.measured) or not history.measured[slot]:
            return None
        millis_per_percent = self._capacity_at_record[slot] / 100.0
        return Baseline(
            mean_millis=float(history.mean[slot] * millis_per_percent),
            stdev_millis=float(history.stdev[slot] * millis_per_percent),
            peak_percent=float(history.peak[slot]),
            taken_at=history.taken_at,
            one_sample=self._one_sample_source and history.stdev[slot] == 0 and history.mean[slot] > 0,
        )

    def _record(self, table: NodeTable, usage: NodeUsage) -> None:
        """Take in a new trusted snapshot once: every node's reading, then retire and learn in-flight pods."""
        snapshot = usage.snapshot
        if snapshot is None or snapshot is self._recorded:
            return
        self._recorded = snapshot
        active = table.active_slots()
        whole = self.view.usage(table, active, self.policy)
        size = table.capacity
        avg, stdev, valid = np.zeros(size), np.zeros(size), np.zeros(size, dtype=np.bool_)
        avg[active], stdev[active], valid[active] = whole.cpu.avg, whole.cpu.stdev, whole.cpu.valid
        now = snapshot.taken_at
        capacity = self._capacity.of(table).astype(np.float64)
        window = snapshot.metrics.window
        start = float(window.start) if window.end > window.start else now - self.args.peak_window
        end = float(window.end) if window.end > window.start else now
        self._window = Window(start, end)
        placed_since = None
        if self.args.seasonal:
            recent = table.index(f"{self._index_name}/recent", self._build_recent)
            placed_since = recent.placed_since(now, self._window, capacity)
        self.history.record(table, now, avg, stdev, valid, placed_since)
        self._one_sample_source = bool((avg[valid] > 0).any() and not (stdev[valid] > 0).any())
        self._capacity_at_record = capacity
        inflight = table.index(self._index_name, self._build_inflight)
        lessons = inflight.new_window(
            self._window, avg * capacity / 100.0, stdev * capacity / 100.0, valid, capacity
        )
        if lessons:
            self.telemetry.lessons.labels(self.name).inc(lessons)
        learned = self.estimator.ratios()
        self.telemetry.learned_classes.labels(self.name).set(int((~np.isnan(learned)).sum()))

    def _note(
        self,
        usage: NodeUsage,
        table: NodeTable,
        nodes: Slots,
        pod_millis: float,
        shape: PodShape,
        estimated: BoolArray,
        unscored: BoolArray,
        without: int,
        missing: FloatArray,
        loads: SlotLoads,
        anchored: Slots,
    ) -> LoadAwareNote:
        if without:
            metrics = usage.note(self.name, table, nodes, {"cpu": estimated}, unscored)
        else:  # every node has a reading: the note names none (and need not look)
            metrics = usage.note(self.name, table, _NO_NODES, {"cpu": _NO_FLAGS}, _NO_FLAGS)
        held = None
        if usage.stale and self.history.known:
            held = max(0.0, self.clock() - self.history.taken_at)
            if not self._warned_stale:
                log.warning(
                    "%s: metrics from %s are stale; holding each node's last peak and counting every pod "
                    "bound since in full until a fetch succeeds",
                    self.name,
                    usage.source,
                )
                self._warned_stale = True
        elif not usage.stale:
            self._warned_stale = False
        return LoadAwareNote(
            plugin=self.name,
            metrics=metrics,
            pod_millis=pod_millis,
            how_estimated=self.estimator.describe(shape),
            names=table.names,
            nodes=nodes,
            estimated_mask=estimated,
            unscored_mask=unscored,
            missing_by_slot=missing,
            rise_by_slot=loads.rise,
            anchored_slots=anchored,
            held_for_seconds=held,
            rise_fit=self.history.calibration.fit,
        )

    def _count(self, usage: NodeUsage, nodes: int, without: int, unscored: int, inflight: int) -> None:
        estimated = without - unscored
        self._stale_gauge.set(nodes - without if usage.stale else 0)
        self._estimated_gauge.set(estimated)
        self._unscored_gauge.set(unscored)
        self._inflight_gauge.set(inflight)
        if estimated:
            self.services.telemetry.estimated_scores.labels(self.name, usage.source).inc(estimated)
