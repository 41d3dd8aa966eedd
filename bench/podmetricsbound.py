"""PodMetricsBalance: the hindsight bound told only what per-pod metrics would have shown so far.

``bench/hindsight.py`` bounds placement with the running pods' *future* known exactly. This plugin
asks the question a design decision needs: how far would a load-aware scheduler get if, on top of
node metrics, it read every running pod's own CPU use (cAdvisor's
``container_cpu_usage_seconds_total``, KubeVirt's ``kubevirt_vmi_cpu_usage_seconds_total``), with
nothing about the future? It reads the replayed trace but, at each refresh, only the samples up to
now, and forecasts each running pod from them:

- a pod that has run a day or more repeats its own mean day (its samples at the same time of day,
  over up to ``profileDays`` past days, smoothed over ``smoothingSteps``): its level and its daily
  peak, both measured;
- a younger pod runs at its mean so far, shaped by the fleet's daily wave (the mean pod's use by
  time of day, over the same past days) and scaled so that the wave's mean over the hours it has
  run is its measured mean: a VM placed at night is expected to rise in the afternoon;
- a pod placed since the last refresh, the pod being placed included, is its class's (instance
  type, else owner) mean level of the pods measured so far, on the fleet's wave.

Departures are not foreseen: a running pod is forecast to stay (weighing each pod by the share of
pods of its age that the lifetimes seen so far say are still running later, Kaplan-Meier, changed
nothing measurable: docs/benchmarks.md). Each pod goes to the node whose forecast over
``horizonSeconds`` with the pod on it stays furthest under the target (as HindsightBalance's
``objective: Peak``, which is what LoadAwarePacking aims at). Every node is open to it, as to the
hindsight bounds.

For comparison only (docs/benchmarks.md, "What per-pod metrics would buy"): not shipped. Load it
with ``--plugin bench.podmetricsbound:PodMetricsBalance`` from the repository root (PYTHONPATH=.),
its args naming the same ``trace`` as ``--trace`` (examples/replay/podmetricsbound.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field
from scipy.ndimage import uniform_filter1d

from bench.hindsight import FutureUse, TraceBound, TraceBoundArgs
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.loadawarepacking.estimator import cpu_limit

Forecast = npt.NDArray[np.float64]
"""Cores per step of the grid over the horizon, from the last refresh on."""


class PodMetricsArgs(TraceBoundArgs):
    horizon_seconds: float = Field(172800.0, gt=0, description="How far ahead a node's forecast is read.")
    day_seconds: float = Field(86400.0, gt=0, description="The period of the daily wave.")
    refresh_seconds: float = Field(3600.0, gt=0, description="How often the pods' forecasts are read again.")
    profile_days: int = Field(3, ge=1, description="How many past days a pod's own mean day is taken over.")
    smoothing_steps: int = Field(7, ge=1, description="The moving average over a pod's mean day (noise).")


class PastForecasts:
    """Every running pod's forecast from its own samples so far, made at one step of the grid."""

    def __init__(self, future: FutureUse, args: PodMetricsArgs) -> None:
        self.future = future
        self.day = max(1, round(args.day_seconds / args.step_seconds))
        self.horizon = max(1, int(args.horizon_seconds // args.step_seconds))
        self.profile_days = args.profile_days
        self.smoothing = args.smoothing_steps
        alive = future.use > 0
        self.fleet_wave = future.use.sum(axis=1, dtype=np.float64) / np.maximum(alive.sum(axis=1), 1)
        self.cumulative = np.concatenate(
            [np.zeros((1, future.use.shape[1])), np.cumsum(future.use, axis=0, dtype=np.float64)]
        )
        self.made_at = -1
        self.position: dict[int, int] = {}
        self.forecasts = np.zeros((self.horizon, 0))
        self.class_level = np.full(future.class_count, np.nan)
        self.wave_ahead = np.ones(self.horizon)

    def refresh(self, now: int) -> None:
        """Forecast from the samples before step ``now``."""
        use, day = self.future.use, self.day
        days = min(now // day, self.profile_days)
        # the mean pod's day, index i at the time of day of step now + i, as a share of its mean
        wave = np.ones(day)
        if days:
            blocks = [self.fleet_wave[now - day * j : now - day * (j - 1)] for j in range(1, days + 1)]
            wave = np.mean([block / max(float(block.mean()), 1e-9) for block in blocks], axis=0)
        ahead = np.arange(self.horizon) % day
        self.wave_ahead = wave[ahead]
        first = self.future.first
        running = np.nonzero((first < now) & (use[now - 1] > 0))[0] if now > 0 else np.zeros(0, np.int64)
        age = now - first[running]
        used = self.cumulative[now, running] - self.cumulative[first[running], running]
        level = used / np.maximum(age, 1)
        forecasts = np.empty((self.horizon, len(running)))
        old = age >= day
        if old.any():
            columns = running[old]
            known = np.minimum(age[old] // day, self.profile_days)
            own = np.zeros((day, len(columns)))
            for j in range(1, int(known.max()) + 1):
                has = known >= j
                own[:, has] += use[now - day * j : now - day * (j - 1)][:, columns[has]]
            own /= known[None, :]
            own = uniform_filter1d(own, self.smoothing, axis=0, mode="wrap")
            forecasts[:, old] = own[ahead]
        young = ~old
        if young.any():
            # the wave's mean over the steps each young pod has run (a circular segment of the day)
            doubled = np.concatenate([[0.0], np.cumsum(np.concatenate([wave, wave]))])
            begin = (first[running[young]] - now) % day
            lived = np.minimum(age[young], day)
            wave_mean = (doubled[begin + lived] - doubled[begin]) / np.maximum(lived, 1)
            scale = level[young] / np.maximum(wave_mean, 1e-9)
            forecasts[:, young] = self.wave_ahead[:, None] * scale[None, :]
        self.forecasts = forecasts
        self.position = {int(column): i for i, column in enumerate(running)}
        classes = self.future.class_of[running]
        counts = np.bincount(classes, minlength=self.future.class_count)
        sums = np.bincount(classes, weights=level, minlength=self.future.class_count)
        self.class_level = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        self.made_at = now

    def of(self, column: int, pod: PodInfo) -> Forecast:
        """The pod's forecast: its own, else its class's mean level (else the fleet's, else before
        anything is measured its CPU limit, as LoadAwarePacking's) on the wave."""
        position = self.position.get(column)
        if position is not None:
            return self.forecasts[:, position]
        level = self.class_level[self.future.class_of[column]]
        if np.isnan(level):
            measured = self.class_level[~np.isnan(self.class_level)]
            limit = cpu_limit(pod) / 1000.0
            level = float(measured.mean()) if len(measured) else (limit if np.isfinite(limit) else 0.0)
        return level * self.wave_ahead


class ForecastLoads:
    """A NodeTable index: per slot, the summed forecasts of its pods, as of the forecasts' refresh."""

    def __init__(self, table: NodeTable, forecasts: PastForecasts) -> None:
        self.forecasts = forecasts
        self.made_at = forecasts.made_at
        self.load = np.zeros((max(table.capacity, 1), forecasts.horizon))
        self.added: dict[int, tuple[int, Forecast, PodInfo]] = {}
        for pod, slot in table.all_pods():
            self.pod_placed(slot, pod, {})

    def rebuild(self) -> None:
        """Sum the pods again with the forecasts just refreshed."""
        self.load[:] = 0.0
        placed = list(self.added.items())
        self.added.clear()
        self.made_at = self.forecasts.made_at
        for column, (slot, _, pod) in placed:
            self._add(slot, column, pod)

    def _add(self, slot: int, column: int, pod: PodInfo) -> None:
        if slot >= len(self.load):
            grown = np.zeros((2 * slot + 1, self.load.shape[1]))
            grown[: len(self.load)] = self.load
            self.load = grown
        forecast = self.forecasts.of(column, pod)
        self.added[column] = (slot, forecast, pod)
        self.load[slot] += forecast

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        column = self.forecasts.future.columns.get(pod.key)
        if column is not None:
            self._add(slot, column, pod)

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        column = self.forecasts.future.columns.get(pod.key)
        placed = None if column is None else self.added.pop(column, None)
        if placed is not None:
            self.load[placed[0]] -= placed[1]


class PodMetricsBalance(TraceBound):
    name: ClassVar[str] = "PodMetricsBalance"
    args_model = PodMetricsArgs
    args: PodMetricsArgs

    def __init__(self, args: PodMetricsArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.forecasts = PastForecasts(self.future, args)
        self.refresh_steps = max(1, int(args.refresh_seconds // args.step_seconds))

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        forecasts = self.forecasts
        now = self.now_step()
        if forecasts.made_at < 0 or now - forecasts.made_at >= self.refresh_steps:
            forecasts.refresh(now)
        loads = table.index(self._index, lambda t: ForecastLoads(t, forecasts))
        if loads.made_at != forecasts.made_at:
            loads.rebuild()
        since = min(now - forecasts.made_at, forecasts.horizon - 1)
        load = loads.load[nodes, since:]
        column = forecasts.future.columns.get(pod.key)
        if column is not None:
            load = load + forecasts.of(column, pod)[since:][None, :]
        return self.score_by_peak(self.percent(table, nodes, load))
