"""Pods bound since the metrics window began, counted until the metrics show all of their use.

Trimaran's TargetLoadPacking counts a pod only within 60 s of the window's end, yet a
15-minute average shows a pod bound 2 minutes ago at 2/15 of its use: a gap of 13/15.
LoadVariationRiskBalancing and LowRiskOverCommitment count no such pod at all. Here a pod
placed on a node (bound by anyone, or assumed by this scheduler: the NodeTable sees them
all) counts with the share of its use the window cannot hold yet:

    missing = estimate * (1 - visible), visible = clamp((end - (bound + lag)) / (end - start), 0, 1)

A pod bound before the window (plus the source's lag) is entirely in the mean and leaves this
index; one bound after its end is entirely missing; in between, the mean holds the share it
was running for and only the rest is added: no gap, and no double count. That holds when the
source has the whole window; a fresh Prometheus has less and shows a pod sooner, and the step
pods make inflates the window's deviation. So a node whose pods since its last reading before
them (its group, below) are younger than the window is *anchored*: predicted from that reading,
with those pods counted in full (``anchored``). A baseline of one sample (a source that just
started) is read again at every snapshot from the data since (``_reread_one_sample_baselines``).

The index is a NodeTable ``PodIndex``, so it follows binds, deletions and evictions as the
table does; its rows are numpy arrays (slot, bind time, class, request, limit) so that a
cycle sums every node's missing use with one ``bincount``.

It also runs the learning behind the estimator: the first pod placed on a node with no
open group starts one with the node's current mean as baseline; once every pod of the group
is fully visible, the node's rise over the baseline is what they use, less the drift the
node's other pods made meanwhile. That drift is read from the nodes that took no pod: their
load moved by a factor (the daily wave, a quiet weekend), and so did the baseline's pods.
Without that correction, a small VM placed as the morning rises was seen to use several
cores, and one placed in the evening nothing (learned ratios swung from 0.9 to 8.7 on a
generated week, where the truth was ~5). A class without a settled lesson does not wait for a
whole window: every snapshot that shows an open group's pods reads their use through the mean
and variance rise (``step``; ``_readings``), each reading replacing the group's last.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.podphase import scheduled_at
from secondary_scheduler.plugins.loadawarepacking.estimator import PodShape, UsageEstimator
from secondary_scheduler.plugins.loadawarepacking.step import observed_use

log = logging.getLogger(__name__)

MIN_LEARNING_SHARE = 0.03
"""A group whose predicted use is below this share of the node's capacity teaches nothing: its
step is lost in the node's noise (a node of 15 VMs moves by a few percent within a window)."""


UNKNOWN_SPREAD = 0.6
"""The spread (standard deviation over mean) assumed for a class with too few readings to know its
own: a VM whose level is anywhere from idle to flat out, uniformly, spreads by 0.58."""


MIN_SHOWN_SHARE = 0.2
"""A first lesson needs the window's mean to show at least this share of the use it concludes: a
group placed just before the snapshot shows a rise within the noise, and read through the variance
that taught 2-5x the truth (live bench: 11.9x a small VM's request learned where it uses 7x)."""


@dataclass(frozen=True)
class Window:
    """The metrics window the node means were measured over (Unix seconds)."""

    start: float
    end: float


@dataclass(frozen=True)
class Baseline:
    """A node's reading before a group's pods: what their rise is measured against."""

    mean_millis: float
    stdev_millis: float
    peak_percent: float
    """The node's predicted peak then (window percentile, before any of the group's pods)."""
    taken_at: float
    """When the reading's window ended: pods that show in the source only after it are not in it."""
    one_sample: bool = False
    """The reading is one sample of a source that had just started (every node's deviation 0, this
    node's mean above 0): its series began then, and later windows hold all of its data since."""


@dataclass
class Group:
    """Pods placed on one node since its baseline reading, for learning what they use."""

    baseline: Baseline
    level_at_baseline: float
    """The quiet nodes' level index (``InFlightPods.level``) when the group began."""
    started_at: float
    members: list[PodShape] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    disturbed: bool = False
    """Another pod left the node meanwhile: the node's step no longer measures the members alone."""
    gone: set[str] = field(default_factory=set)
    """Members removed and not placed again. An assumed pod is removed and placed again when its
    binding arrives: that is no departure (it disturbed every group before, so nothing was learned)."""

    def drift(self, level: float) -> float:
        """How much the node's other pods moved since the baseline: as the quiet nodes' load did."""
        return level / self.level_at_baseline if self.level_at_baseline > 0 and level > 0 else 1.0

    @property
    def measurable(self) -> bool:
        return not self.disturbed and not self.gone


def bound_time(pod: PodInfo, now: float) -> float:
    """When the pod started running on its node, as well as the pod tells.

    The PodScheduled condition's time (set by the API server at binding); a pod assumed by this
    scheduler and not bound yet has none and is stamped now; a pod created with nodeName (by
    another scheduler or a controller) has none either and started when it was created.
    """
    stamp = scheduled_at(pod.obj)
    if stamp is not None:
        return stamp
    if not pod.node_name:
        return now
    created = pod.creation_timestamp
    if created:
        try:
            return datetime.fromisoformat(created).timestamp()
        except ValueError:
            pass
    return now


def visible_share(bound_at: FloatArray, window: Window, lag: float) -> FloatArray:
    """The share of the use of pods bound at ``bound_at`` that ``window``'s mean holds, their use
    showing ``lag`` seconds after binding."""
    span = max(window.end - window.start, 1e-9)
    return np.clip((window.end - (bound_at + lag)) / span, 0.0, 1.0)


class BindStamps:
    """When each pod was bound, kept across a remove and re-add (assumed, then bound; preemption's
    dry runs): a pod placed again keeps its first stamp."""

    def __init__(self) -> None:
        self.by_key: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self.by_key)

    def placed(self, pod: PodInfo, now: float, past: Callable[[float], bool]) -> float | None:
        """The pod's stamp (``bound_time`` the first time it is placed), or None, and the stamp
        forgotten, if ``past(stamp)``: bound too long ago for the index to hold it."""
        stamp = self.by_key.get(pod.key)
        if stamp is None:
            stamp = self.by_key[pod.key] = bound_time(pod, now)
        if past(stamp):
            del self.by_key[pod.key]
            return None
        return stamp

    def forget(self, key: str) -> None:
        self.by_key.pop(key, None)

    def keep_only(self, wanted: Callable[[str, float], bool]) -> None:
        """Forget every stamp but those ``wanted(key, stamp)`` says to keep."""
        self.by_key = {key: stamp for key, stamp in self.by_key.items() if wanted(key, stamp)}


class InFlightPods:
    """The NodeTable index of pods whose use the metrics do not fully show yet."""

    def __init__(
        self,
        table: NodeTable,
        estimator: UsageEstimator,
        clock: Callable[[], float],
        baseline_of: Callable[[int], Baseline | None],
        window: Window | None = None,
    ) -> None:
        """``baseline_of(slot)``: the node's latest reading (None if unknown);
        ``window``: the current metrics window, if known (pods wholly inside it are not indexed)."""
        self.table = table
        self.estimator = estimator
        self.clock = clock
        self.baseline_of = baseline_of
        self._rows: dict[str, int] = {}
        self._stamps = BindStamps()
        size = 64
        self.slot: IntArray = np.zeros(size, dtype=np.int64)
        self.bound_at: FloatArray = np.zeros(size)
        self.class_id: IntArray = np.zeros(size, dtype=np.int64)
        self.request: FloatArray = np.zeros(size)
        self.limit: FloatArray = np.zeros(size)
        self.alive: BoolArray = np.zeros(size, dtype=np.bool_)
        self._used = 0
        self.estimate_millis: FloatArray = np.zeros(size)
        self.unseen: FloatArray = np.zeros(size)
        self.upside: FloatArray = np.zeros(size)
        """Per row, the pod's estimate, the share of its use the window lacks, and the standard
        deviation of its use beyond the estimate (``_upsides``): set when the pod is placed, and
        for every row again only after a lesson or a new window (``_settle_rows``)."""
        self._settled_as_of: tuple[int, Window] | None = None
        self.window = window or Window(0.0, 0.0)
        self.groups: dict[int, Group] = {}
        self.level = 0.0
        """How the load of the nodes that took no pod moved, as an index chained over snapshots."""
        self._previous_means: FloatArray = np.zeros(0)
        self._previous_measured: BoolArray = np.zeros(0, dtype=np.bool_)
        self._anchor_ok: BoolArray = np.zeros(0, dtype=np.bool_)
        self._anchor_started: FloatArray = np.zeros(0)
        self._anchor_peak: FloatArray = np.zeros(0)
        """Per table slot, kept as groups open, grow and close: whether the node's group may
        anchor it (none of its pods showed before the baseline), when the group began (inf: no
        group), and the baseline's peak. A cycle reads them with a few array operations."""
        for pod, slot in table.all_pods():
            self.pod_placed(slot, pod, {})

    def __len__(self) -> int:
        return len(self._rows)

    # -- PodIndex ---------------------------------------------------------------------------

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        now = self.clock()
        bound = self._stamps.placed(pod, now, self._settled)
        if bound is None:
            return
        shape = self.estimator.shape(pod)
        previous = self._rows.pop(pod.key, None)
        if previous is not None:
            self.alive[previous] = False
        row = self._take_row()
        self.slot[row], self.bound_at[row], self.class_id[row] = slot, bound, shape.class_id
        self.request[row], self.limit[row], self.alive[row] = shape.request_millis, shape.limit_millis, True
        self.estimate_millis[row] = self.estimator.estimate_one(shape)
        self.unseen[row] = 1.0 - self._visible_share_of(bound)
        self.upside[row : row + 1] = self._upsides(
            self.class_id[row : row + 1], self.estimate_millis[row : row + 1], self.limit[row : row + 1]
        )
        self._rows[pod.key] = row
        self._join_group(slot, pod.key, shape)

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        row = self._rows.pop(pod.key, None)
        if row is not None:
            self.alive[row] = False
        group = self.groups.get(slot)
        if group is None:
            return
        if pod.key in group.keys:
            group.gone.add(pod.key)
        else:
            group.disturbed = True

    # -- per cycle ---------------------------------------------------------------------------

    def anchored(self, now: float) -> tuple[Slots, FloatArray]:
        """The table slots whose node is predicted from its baseline (a group younger than the
        window is open on it), and those baselines' peaks in percent.

        While a group is young, its node's reading holds an unknown share of the group's pods (a
        source with less history than the window shows them sooner than the window's length
        says) and their step inflates its deviation, so reading plus missing share counted
        them up to twice. The baseline is the node before them: it plus their whole estimate
        counts them once, whatever the source holds. Few nodes have a group open: the answer
        is those slots only, not an array over the table.
        """
        self._fit_anchors(self.table.capacity)
        span = self.window.end - self.window.start
        open_slots = np.flatnonzero(self._anchor_ok)
        slots = open_slots[now - self._anchor_started[open_slots] <= span]
        return slots, self._anchor_peak[slots]

    def missing(
        self, now: float, burst_window: float, burst_margin: float, anchored: Slots, size: int
    ) -> tuple[FloatArray, FloatArray]:
        """Per table slot below ``size``: millicores of in-flight pods not yet in the window (all of
        them on ``anchored`` slots), and the margin of those whose class is not steady: the burst
        margin of those placed in the last ``burst_window`` seconds, plus ``inflightUncertainty``
        standard deviations of what their unseen shares may use beyond the estimate (each its
        class's spread of it, at most up to its limit, summed as independent draws)."""
        used = self._settle_rows()
        alive = self.alive[:used]
        slots = self.slot[:used]
        estimate = self.estimate_millis[:used]
        in_full = np.zeros(max(len(self._anchor_ok), size), dtype=np.bool_)
        in_full[anchored] = True
        bound_at = self.bound_at[:used]
        share = np.where(in_full[slots], 1.0, self.unseen[:used])
        weights = np.where(alive, estimate * share, 0.0)
        unsteady = ~self.estimator.steady_classes()[self.class_id[:used]]  # steady: the estimate holds
        margin = np.where(alive & unsteady & (now - bound_at < burst_window), estimate * burst_margin, 0.0)
        # (without rows, bincount's zeros are integers)
        missing = np.bincount(slots, weights=weights, minlength=size)[:size].astype(np.float64, copy=False)
        margins = np.bincount(slots, weights=margin, minlength=size)[:size].astype(np.float64, copy=False)
        z = self.estimator.args.inflight_uncertainty
        uncertain = np.flatnonzero(alive & (self.upside[:used] > 0)) if z > 0 else ()
        if len(uncertain):  # the few nodes holding such pods: summed and rooted there only
            deviation = self.upside[uncertain] * share[uncertain]
            at, inverse = np.unique(slots[uncertain], return_inverse=True)
            variance = np.bincount(inverse, weights=deviation * deviation, minlength=len(at))
            inside = at < size
            margins[at[inside]] += z * np.sqrt(variance[inside])
        return missing, margins

    def _settle_rows(self) -> int:
        """Refill ``estimate_millis`` and ``unseen`` of every row after a lesson or a new window
        (a row placed since has them from ``pod_placed``); returns the rows in use."""
        as_of = (self.estimator.observations, self.window)
        used = self._used
        if as_of != self._settled_as_of:
            self._settled_as_of = as_of
            self.estimate_millis[:used] = self.estimator.estimate(
                self.class_id[:used], self.request[:used], self.limit[:used]
            )
            self.unseen[:used] = 1.0 - self.visible_share(self.bound_at[:used])
            self.upside[:used] = self._upsides(
                self.class_id[:used], self.estimate_millis[:used], self.limit[:used]
            )
        return used

    def _upsides(self, class_ids: IntArray, estimates: FloatArray, limits: FloatArray) -> FloatArray:
        """Per pod, the standard deviation of its use beyond its estimate: its class's spread of
        readings (``UNKNOWN_SPREAD`` below enough of them) times the estimate, never past its limit
        (a pod predicted at its limit, nothing learned yet, has none), and none for a steady class."""
        spread = self.estimator.spreads()[class_ids]
        upside = estimates * np.where(np.isnan(spread), UNKNOWN_SPREAD, spread)
        upside = np.minimum(upside, np.maximum(limits - estimates, 0.0))
        return np.where(self.estimator.steady_classes()[class_ids], 0.0, upside)

    def _visible_share_of(self, bound_at: float) -> float:
        """``visible_share`` of one pod, without arrays (the same operations, the same result)."""
        lag = self.estimator.args.metrics_lag
        span = max(self.window.end - self.window.start, 1e-9)
        return min(max((self.window.end - (bound_at + lag)) / span, 0.0), 1.0)

    def visible_share(self, bound_at: FloatArray) -> FloatArray:
        """The share of each pod's use the current window's mean holds."""
        return visible_share(bound_at, self.window, self.estimator.args.metrics_lag)

    # -- per snapshot ------------------------------------------------------------------------

    def new_window(
        self, window: Window, means: FloatArray, stdevs: FloatArray, measured: BoolArray, capacity: FloatArray
    ) -> int:
        """A new snapshot: drop pods now wholly in the mean, and learn from groups that completed
        (and, for classes not learned yet, from the first snapshot that holds a group's pods).

        ``means``, ``stdevs``, ``measured`` and ``capacity`` are per table slot (millicores).
        Returns how many groups taught the estimator.
        """
        self.window = window
        used = self._used
        visible = self.visible_share(self.bound_at[:used])
        done = self.alive[:used] & (visible >= 1.0)
        pending_slots = set(self.slot[:used][self.alive[:used] & ~done].tolist())
        level = self._level(means, measured, capacity, pending_slots)
        lessons = self._readings(pending_slots, level, means, stdevs, measured, capacity)
        for key, row in [(key, row) for key, row in self._rows.items() if done[row]]:
            del self._rows[key]
            self._stamps.forget(key)
            self.alive[row] = False
        for slot in [slot for slot in self.groups if slot not in pending_slots]:
            group = self.groups.pop(slot)
            self._unanchor(slot)
            self.estimator.drop_draft(slot)
            if not group.measurable or slot >= len(measured) or not measured[slot]:
                continue
            predicted = sum(self.estimator.estimate_one(shape) for shape in group.members)
            if predicted < MIN_LEARNING_SHARE * capacity[slot]:
                continue
            self.estimator.learn(
                group.members, float(means[slot]) - group.baseline.mean_millis * group.drift(level)
            )
            lessons += 1
        self._reread_one_sample_baselines(means, stdevs, measured, capacity)
        self.level = level
        self._compact()
        self._forget_old_stamps()
        return lessons

    def _readings(
        self,
        pending: set[int],
        level: float,
        means: FloatArray,
        stdevs: FloatArray,
        measured: BoolArray,
        capacity: FloatArray,
    ) -> int:
        """Read what each open group's pods use from this snapshot, while a class of theirs has no
        settled lesson (``UsageEstimator.draft``: each reading replaces the group's last one).

        A whole window's wait (15 minutes and the lag) left a burst's later pods predicted at
        their limits; the mean and variance rise (``step``) tell the group's use as soon as its
        first pods show in the window. The first such reading is the noisiest (the pods have shown
        for seconds), so every later snapshot reads the group again until it is done.
        """
        if not self.groups:
            return 0
        end, lag = self.window.end, self.estimator.args.metrics_lag
        span = self.window.end - self.window.start
        readings = 0
        eligible = []
        for slot, group in self.groups.items():
            if slot not in pending:
                continue  # done at this snapshot: it teaches a settled lesson instead
            if not group.measurable or slot >= len(measured) or not measured[slot]:
                self.estimator.drop_draft(slot)
                continue
            if all(self.estimator.settled(shape) for shape in group.members):
                continue
            # In key order: a set's order follows the process's string hashing, and the sums below
            # would then differ in their last bits from one run to the next.
            rows = [self._rows[key] for key in sorted(group.keys) if key in self._rows]
            if len(rows) != len(group.members):
                continue  # a member already left the index: its share of the mean is unknown
            ages = end - (self.bound_at[rows] + lag)
            if float(ages.max()) <= 0:
                continue  # no member shows yet (those that do not show are a share of 0 below)
            eligible.append((slot, group, rows, ages))
        for slot, group, rows, ages in eligible:
            estimates = self.estimator.estimate(self.class_id[rows], self.request[rows], self.limit[rows])
            if float(estimates.sum()) < MIN_LEARNING_SHARE * capacity[slot]:
                continue
            mean_rise = float(means[slot]) - group.baseline.mean_millis * group.drift(level)
            variance_rise = float(stdevs[slot]) ** 2 - group.baseline.stdev_millis**2
            use = observed_use(estimates, ages, mean_rise, variance_rise, span)
            if use is None or mean_rise < MIN_SHOWN_SHARE * use:
                continue  # too little shows yet to tell the pods from the node's noise: next snapshot
            self.estimator.draft(slot, group.members, use)
            readings += 1
        return readings

    def _reread_one_sample_baselines(
        self, means: FloatArray, stdevs: FloatArray, measured: BoolArray, capacity: FloatArray
    ) -> None:
        """Read again the load before an open group of a node whose baseline was one sample.

        A source that just started holds one sample per node (every deviation exactly 0): a
        node's mean is that sample, a point or two of noise off its load, and a node packed to
        the target from it ends over by as much (live bench: up to 2.4 points, every node's
        baseline being the first snapshot's). Its series began then, so every later window
        holds the data since the baseline was read, all of it: the group's pods are in it
        by the share of that span they have shown for (``q``), and the node before them is the
        mean less what they add to it, ``mean - sum(estimate * q)``, read from more samples at
        each snapshot. The anchored prediction then adds their whole estimate, so the estimates
        count only by the share the window does not show yet (live bench: 1.0 point of error
        over the nodes, 0.4 two snapshots later). Learning keeps the first reading: a baseline
        read through the estimates would teach them back to themselves.
        """
        end, lag = self.window.end, self.estimator.args.metrics_lag
        for slot, group in self.groups.items():
            baseline = group.baseline
            if not baseline.one_sample or not group.measurable or slot >= len(measured):
                continue
            held = end - baseline.taken_at  # the series' data since its one sample
            if not measured[slot] or stdevs[slot] <= 0 or capacity[slot] <= 0 or held <= 0:
                continue  # still that sample alone: nothing new
            rows = [self._rows[key] for key in sorted(group.keys) if key in self._rows]
            if len(rows) != len(group.members):
                continue  # a member already left the index: its share of the mean is unknown
            estimates = self.estimator.estimate(self.class_id[rows], self.request[rows], self.limit[rows])
            shown = np.clip((end - (self.bound_at[rows] + lag)) / held, 0.0, 1.0)
            before_group = float(means[slot]) - float(estimates @ shown)
            self._fit_anchors(max(self.table.capacity, slot + 1))
            moved = 100.0 * (before_group - baseline.mean_millis) / float(capacity[slot])
            self._anchor_peak[slot] = baseline.peak_percent + moved

    # -- internals ---------------------------------------------------------------------------

    def _level(self, means: FloatArray, measured: BoolArray, capacity: FloatArray, busy: set[int]) -> float:
        """The level index: the last one times how much the nodes that took no pod lately moved
        since the last snapshot, over those same nodes.

        Comparing the quiet nodes' mean load now with theirs at a group's start compared two
        different sets: once the score had kept pods off the busiest nodes, they were most of
        what stayed quiet, and a burst on a fresh cluster read as a 73 % drift of every node.
        """
        quiet = measured & (capacity > 0)
        if busy or self.groups:
            touched = np.zeros(len(quiet), dtype=np.bool_)
            touched[[slot for slot in busy | set(self.groups) if slot < len(quiet)]] = True
            if (quiet & ~touched).any():
                quiet &= ~touched
        size = min(len(quiet), len(self._previous_means))
        both = quiet[:size] & self._previous_measured[:size]
        before = float(self._previous_means[:size][both].sum())
        moved = float(means[:size][both].sum()) / before if before > 0 else 1.0
        self._previous_means, self._previous_measured = means.copy(), measured.copy()
        return (self.level or 1.0) * moved

    def _fit_anchors(self, size: int) -> None:
        if len(self._anchor_ok) < size:
            extra = size - len(self._anchor_ok)
            self._anchor_ok = np.concatenate([self._anchor_ok, np.zeros(extra, dtype=np.bool_)])
            self._anchor_started = np.concatenate([self._anchor_started, np.full(extra, np.inf)])
            self._anchor_peak = np.concatenate([self._anchor_peak, np.zeros(extra)])

    def _anchor(self, slot: int, group: Group) -> None:
        self._fit_anchors(max(self.table.capacity, slot + 1))
        self._anchor_ok[slot] = self._shown_after(slot, group.baseline)
        self._anchor_started[slot] = group.started_at
        self._anchor_peak[slot] = group.baseline.peak_percent

    def _unanchor(self, slot: int) -> None:
        if slot < len(self._anchor_ok):
            self._anchor_ok[slot] = False
            self._anchor_started[slot] = np.inf

    def _shown_after(self, slot: int, baseline: Baseline) -> bool:
        """Whether every in-flight pod on the node showed in the source only after the baseline
        was read (one that showed before is partly in it already: the node cannot be anchored)."""
        used = self._used
        on_node = self.alive[:used] & (self.slot[:used] == slot)
        early = self.bound_at[:used] + self.estimator.args.metrics_lag < baseline.taken_at
        return not bool((on_node & early).any())

    def _settled(self, bound: float) -> bool:
        return self.window.end > 0 and bound + self.estimator.args.metrics_lag <= self.window.start

    def _join_group(self, slot: int, key: str, shape: PodShape) -> None:
        group = self.groups.get(slot)
        if group is None:
            baseline = self.baseline_of(slot)
            if baseline is None:
                return
            group = self.groups[slot] = Group(baseline, self.level, self.clock())
            self._anchor(slot, group)
        elif not self._shown_after(slot, group.baseline):
            self._unanchor(slot)
        group.gone.discard(key)
        if key not in group.keys:
            group.keys.add(key)
            group.members.append(shape)

    def _take_row(self) -> int:
        if self._used == len(self.alive):
            self._compact()
            if self._used >= len(self.alive) // 2:
                self._grow(2 * len(self.alive))
        row = self._used
        self._used += 1
        return row

    def _grow(self, size: int) -> None:
        def grown(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros(size, dtype=array.dtype)
            bigger[: len(array)] = array
            return bigger

        self.slot, self.bound_at, self.class_id = grown(self.slot), grown(self.bound_at), grown(self.class_id)
        self.request, self.limit, self.alive = grown(self.request), grown(self.limit), grown(self.alive)
        self.estimate_millis, self.unseen = grown(self.estimate_millis), grown(self.unseen)
        self.upside = grown(self.upside)

    def _compact(self) -> None:
        """Move the live rows to the front (rows of removed pods are only marked dead)."""
        used = self._used
        if used == len(self._rows):
            return
        keep = np.flatnonzero(self.alive[:used])
        new_row = {int(old): new for new, old in enumerate(keep.tolist())}
        moved = (self.slot, self.bound_at, self.class_id, self.request, self.limit, self.alive)
        for array in (*moved, self.estimate_millis, self.unseen, self.upside):
            array[: len(keep)] = array[keep]
        self.alive[len(keep) : used] = False
        self._rows = {key: new_row[row] for key, row in self._rows.items()}
        self._used = len(keep)

    def _forget_old_stamps(self) -> None:
        """Stamps of pods no longer placed and bound before the window are of no use any more."""
        if len(self._stamps) > 2 * len(self._rows) + 1024:
            self._stamps.keep_only(lambda key, _: key in self._rows)
