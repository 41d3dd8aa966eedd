"""Pods placed within the seasonal horizon, so that a forecast is checked against its own pods.

``risecalibration`` tests each hour's forecast of a node's rise against how high the node's mean
went over the next day. The mean a day later also holds the pods placed on the node since, and
Balance places them on the nodes it predicted lowest: checked against the raw mean, the forecast
seemed to explain less than it did (replay: the fit learned slope 0.0-0.3 and an offset of 13
points; against the forecast's own pods, read from the trace, the rise that came was about 6
points + 0.5 x remembered). So what came is read with the pods placed after the forecast taken
out, each at its estimate times the share of it the window shows.

A NodeTable ``PodIndex`` of every pod bound (by anyone) or assumed within the horizon, still on
its node; rows of pods gone or bound longer ago are dropped once enough have gathered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from secondary_scheduler.framework.aliases import FloatArray
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.loadawarepacking.estimator import UsageEstimator
from secondary_scheduler.plugins.loadawarepacking.inflight import BindStamps, Window, visible_share

_COMPACT_AT = 1024
"""Rows of pods gone (preemption's dry runs remove and re-add pods) or bound past the horizon are
dropped once this many have gathered, not at every snapshot."""


class RecentPlacements:
    """Per pod placed within ``keep`` seconds: its slot, bind time and shape, while on its node."""

    def __init__(
        self, table: NodeTable, estimator: UsageEstimator, clock: Callable[[], float], keep: float
    ) -> None:
        self.estimator = estimator
        self.clock = clock
        self.keep = keep
        self._rows: dict[str, int] = {}
        self._stamps = BindStamps()
        self._slot: list[int] = []
        self._bound_at: list[float] = []
        self._class_id: list[int] = []
        self._request: list[float] = []
        self._limit: list[float] = []
        self._alive: list[bool] = []
        for pod, slot in table.all_pods():
            self.pod_placed(slot, pod, {})

    def __len__(self) -> int:
        return len(self._rows)

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        now = self.clock()
        bound = self._stamps.placed(pod, now, lambda stamp: now - stamp > self.keep)
        if bound is None:
            return
        previous = self._rows.pop(pod.key, None)
        if previous is not None:
            self._alive[previous] = False
        shape = self.estimator.shape(pod)
        self._rows[pod.key] = len(self._slot)
        self._slot.append(slot)
        self._bound_at.append(bound)
        self._class_id.append(shape.class_id)
        self._request.append(shape.request_millis)
        self._limit.append(shape.limit_millis)
        self._alive.append(True)

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        row = self._rows.pop(pod.key, None)
        if row is not None:
            self._alive[row] = False

    def placed_since(self, now: float, window: Window, capacity: FloatArray) -> Callable[[float], FloatArray]:
        """A function of a time ``since``: per table slot, percent of its ``capacity`` (millicores)
        that the pods placed after ``since`` and still there show in ``window``'s mean."""
        self._expire(now)
        slot = np.asarray(self._slot, dtype=np.int64)
        bound = np.asarray(self._bound_at, dtype=np.float64)
        size = len(capacity)
        if not len(slot):
            return lambda since: np.zeros(size)
        estimate = self.estimator.estimate(
            np.asarray(self._class_id, dtype=np.int64), np.asarray(self._request), np.asarray(self._limit)
        )
        shown = visible_share(bound, window, self.estimator.args.metrics_lag)
        safe = np.minimum(slot, size - 1)
        divisor = np.where((slot < size) & (capacity[safe] > 0), capacity[safe], np.inf)
        percent = np.where(np.asarray(self._alive, dtype=np.bool_), 100.0 * estimate * shown / divisor, 0.0)

        def since(when: float) -> FloatArray:
            after = bound > when
            placed = np.bincount(safe[after], weights=percent[after], minlength=size)[:size]
            return placed.astype(np.float64, copy=False)  # (with no row after, bincount's are integers)

        return since

    def _expire(self, now: float) -> None:
        """Drop the rows of pods gone or bound more than ``keep`` ago once enough have gathered."""
        # rows are appended as pods are placed: bind times almost ordered, so the old ones lead
        old = sum(1 for bound in self._bound_at[:_COMPACT_AT] if now - bound > self.keep)
        dead = len(self._slot) - len(self._rows)  # every live row is some pod's
        if old + dead < _COMPACT_AT:
            return
        keep = [
            row
            for row, (bound, alive) in enumerate(zip(self._bound_at, self._alive, strict=True))
            if alive and now - bound <= self.keep
        ]
        renumber = {row: index for index, row in enumerate(keep)}
        for name in ("_slot", "_bound_at", "_class_id", "_request", "_limit", "_alive"):
            column = getattr(self, name)
            setattr(self, name, [column[row] for row in keep])
        self._rows = {key: renumber[row] for key, row in self._rows.items() if row in renumber}
        self._stamps.keep_only(lambda _, bound: now - bound <= self.keep)
