"""Each node's CPU over time: the peak of a recent window, and its daily and weekly pattern.

Means hide peaks: a node at 60 % on average that touches 90 % every few minutes is not a
node to fill to 70 %. Each snapshot gives a node a reading ``mean + z * stddev`` (z from
peakPercentile, so with a 95th percentile and a normal spread, 1.645 deviations: the
percentile of the window; metrics-server, which has no deviation, gives its latest
reading). The node's peak is the larger of that and the same percentile of its readings
over peakWindow, so a spike seen one snapshot ago is not forgotten at the next.

Loads that rise every morning are invisible to a 15-minute window at night. Each node's
hourly peak of means is remembered by hour of week (and by hour of day), blended across
weeks (days); ``seasonal_rise`` is how much higher the next seasonalHorizon was than the
current hour in the previous weeks (else days), added to the prediction as ``risecalibration``
weighs it once it has seen how well that foretold the days that came. The history lives
in the scheduler's memory: a restart starts it over, and a node only has a pattern once it
has been watched for a day.

Everything is kept per NodeTable slot, reset when a slot changes hands.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from statistics import NormalDist

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.plugins.loadawarepacking.risecalibration import RiseCalibration

HOUR = 3600.0
RING = 64
"""Readings kept per node for the window's percentile (a 30-s refresh fills 15 minutes with 30)."""
_BLEND = 0.5
"""Weight of the newest day (week) in a bin's remembered value."""


def z_of(percentile: float) -> float:
    """Standard deviations above the mean at ``percentile`` of a normal distribution."""
    return NormalDist().inv_cdf(percentile / 100.0)


class Profile:
    """Per slot and hour bin (24 of a day or 168 of a week): the remembered hourly peak of means."""

    def __init__(self, bins: int, capacity: int) -> None:
        self.bins = bins
        self.value = np.full((capacity, bins), np.nan, dtype=np.float32)
        """Blend of previous days' (weeks') hourly peaks; NaN until one was seen."""
        self.run = np.full((capacity, bins), np.nan, dtype=np.float32)
        """This hour's peak so far."""
        self.run_at = np.full(bins, -np.inf)
        """When the bin's current run started."""

    def bin(self, now: float) -> int:
        return int(now // HOUR) % self.bins

    def record(self, now: float, slots: np.ndarray, percent: FloatArray) -> None:
        b = self.bin(now)
        if now - self.run_at[b] >= HOUR:  # a new day (week) for this bin: fold the last run in
            old, run = self.value[:, b], self.run[:, b]
            self.value[:, b] = _blend(old, run)
            self.run[:, b] = np.nan
            self.run_at[b] = now
        self.run[slots, b] = np.fmax(self.run[slots, b], percent)

    def rise(self, now: float, horizon: float) -> FloatArray:
        """Per slot, percent points the coming hours peaked above this hour (NaN: no pattern known)."""
        b = self.bin(now)
        ahead = [(b + k) % self.bins for k in range(1, max(1, int(horizon // HOUR)) + 1)]
        # The coming hours have not run today (this week): their last run is a previous day's.
        value, run = self.value[:, ahead], self.run[:, ahead]
        remembered = _blend(value, run)
        with _quiet():
            later = np.nanmax(remembered, axis=1)
        return (later - self.value[:, b]).astype(np.float64)

    def reset(self, slot: int) -> None:
        self.value[slot] = np.nan
        self.run[slot] = np.nan

    def grow(self, capacity: int) -> None:
        extra = capacity - len(self.value)
        if extra > 0:
            pad = np.full((extra, self.bins), np.nan, dtype=np.float32)
            self.value, self.run = np.vstack([self.value, pad]), np.vstack([self.run, pad])


def _blend(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """A bin's remembered value after another day's (week's) run; either may be missing (NaN)."""
    mixed = _BLEND * new + (1 - _BLEND) * old
    return np.where(np.isnan(old), new, np.where(np.isnan(new), old, mixed))


def _row_percentile(rows: FloatArray, percentile: float) -> FloatArray:
    """Each row's percentile over its non-NaN values (linear, as numpy's default); NaN for none.

    ``np.nanpercentile`` along rows loops in Python per row: thousands of nodes took a second.
    """
    ordered = np.sort(rows, axis=1)  # NaN sorts last
    count = (~np.isnan(rows)).sum(axis=1)
    position = np.maximum(count - 1, 0) * (percentile / 100.0)
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, np.maximum(count - 1, 0))
    picked = np.arange(len(rows))
    if not rows.shape[1]:
        return np.full(len(rows), np.nan)
    below, above = ordered[picked, low], ordered[picked, high]
    value = below + (above - below) * (position - low)
    return np.where(count > 0, value, np.nan)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """np.nanmax warns on all-NaN rows, which are the normal case for a node without a pattern."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


class NodeHistory:
    """Per table slot: the latest reading, the window's peak, and the seasonal rise."""

    def __init__(self, percentile: float, window: float, seasonal: bool, horizon: float) -> None:
        self.z = z_of(percentile)
        self.percentile = percentile
        self.window = window
        self.seasonal = seasonal
        self.horizon = horizon
        self._names: list[str] = []
        self._version = -1
        self.mean = np.zeros(0)
        """Latest mean, percent of capacity."""
        self.stdev = np.zeros(0)
        """Latest standard deviation over the window, percent points."""
        self.peak = np.zeros(0)
        """Peak over the window, percent of capacity."""
        self.rise = np.zeros(0)
        """Seasonal rise ahead, percent points (0 without a pattern)."""
        self.measured: BoolArray = np.zeros(0, dtype=np.bool_)
        """Whether the latest snapshot had a CPU reading for the slot."""
        self.taken_at = 0.0
        self._ring = np.zeros((0, RING))
        self._ring_at = np.full(RING, -np.inf)
        self._next = 0
        self._daily = Profile(24, 0)
        self._weekly = Profile(168, 0)
        self.calibration = RiseCalibration(horizon)
        """How well the remembered rise foretold the next day: it weighs the rise once known."""

    @property
    def known(self) -> bool:
        """Whether any snapshot was recorded."""
        return self.taken_at > 0

    def record(
        self,
        table: NodeTable,
        now: float,
        avg: FloatArray,
        stdev: FloatArray,
        valid: BoolArray,
        placed_since: Callable[[float], FloatArray] | None = None,
    ) -> None:
        """A snapshot's CPU per slot (percent; arrays over the table's capacity), and what the pods
        placed after a given time show in it (``RiseCalibration.observe``)."""
        self._follow(table)
        high = np.where(valid, avg + self.z * stdev, np.nan)
        self._ring[:, self._next] = high
        self._ring_at[self._next] = now
        self._next = (self._next + 1) % RING
        kept = _row_percentile(self._ring[:, self._ring_at >= now - self.window], self.percentile)
        self.peak = np.nan_to_num(np.fmax(high, kept), nan=0.0)
        self.mean = np.where(valid, avg, 0.0)
        self.stdev = np.where(valid, stdev, 0.0)
        self.measured = valid.copy()
        self.taken_at = now
        self.rise = np.zeros(len(valid))
        if self.seasonal:
            slots = np.flatnonzero(valid)
            self._daily.record(now, slots, avg[slots])
            self._weekly.record(now, slots, avg[slots])
            weekly, daily = self._weekly.rise(now, self.horizon), self._daily.rise(now, self.horizon)
            remembered = np.clip(np.nan_to_num(np.where(np.isnan(weekly), daily, weekly)), 0.0, 100.0)
            patterned = ~(np.isnan(weekly) & np.isnan(daily))
            mean = np.where(valid, avg, np.nan)
            self.calibration.observe(now, mean, remembered, patterned, placed_since)
            self.rise = self.calibration.calibrated(remembered, patterned)

    def _follow(self, table: NodeTable) -> None:
        """Grow with the table and forget slots that now hold another node."""
        size = table.capacity
        if len(self._ring) < size:
            self._ring = np.vstack([self._ring, np.full((size - len(self._ring), RING), np.nan)])
            self._daily.grow(size)
            self._weekly.grow(size)
            self._names += [""] * (size - len(self._names))
        if table.slots_version == self._version:
            return
        self._version = table.slots_version
        for slot, name in enumerate(table.names[:size]):
            if self._names[slot] != name:
                self._names[slot] = name
                self._ring[slot] = np.nan
                self._daily.reset(slot)
                self._weekly.reset(slot)
                self.calibration.forget(slot)

    def gather(self, nodes: Slots) -> tuple[FloatArray, FloatArray, BoolArray]:
        """(peak, rise, measured) of the scored slots; slots added since the last record have none."""
        if len(self.peak) and int(nodes.max(initial=0)) < len(self.peak):
            return self.peak[nodes], self.rise[nodes], self.measured[nodes]
        inside = nodes < len(self.peak)
        safe = np.where(inside, nodes, 0)
        if not len(self.peak):
            zeros = np.zeros(len(nodes))
            return zeros, zeros, np.zeros(len(nodes), dtype=np.bool_)
        return (
            np.where(inside, self.peak[safe], 0.0),
            np.where(inside, self.rise[safe], 0.0),
            inside & self.measured[safe],
        )
