"""What every pod scored between two snapshots shares, laid out per table slot once.

A cycle at 5,000 nodes pays a few microseconds for each pass over the nodes; the readings'
part of a node's prediction (peak plus seasonal rise) and its capacity change only with a
snapshot or a node, so they are computed once for them and a cycle gathers them (issue 38's
cost target: no slower per pod than TargetLoadPacking).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.plugins.loadawarepacking.history import NodeHistory


def padded(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` over ``size`` slots, zero (False) for slots added since they were taken."""
    if len(values) >= size:
        return values[:size]
    grown = np.zeros(size, dtype=values.dtype)
    grown[: len(values)] = values
    return grown


@dataclass(frozen=True)
class SlotLoads:
    """Per table slot, as of one snapshot, one capacity column and one slot layout."""

    capacity: FloatArray
    """CPU capacity in millicores."""
    divisor: FloatArray
    """The capacity where known, infinity where not: dividing by it gives 0 there, as the
    prediction's masked division did, without a mask per cycle."""
    base_percent: FloatArray
    """Peak plus rise in percent where the capacity is known, 100 where it is not (the
    prediction's part that the in-flight pods and the pod itself are added to)."""
    rise: FloatArray
    measured: BoolArray
    all_measured: bool
    """Every node in the table has a reading: a cycle needs no fallback mask."""

    @classmethod
    def of(cls, history: NodeHistory, capacity_millis: IntArray, table: NodeTable) -> SlotLoads:
        size = table.capacity
        capacity = padded(capacity_millis, size).astype(np.float64)
        peak, rise = padded(history.peak, size), padded(history.rise, size)
        measured = padded(history.measured, size)
        return cls(
            capacity=capacity,
            divisor=np.where(capacity > 0, capacity, np.inf),
            base_percent=np.where(capacity > 0, peak + rise, 100.0),
            rise=rise,
            measured=measured,
            all_measured=bool(measured[table.active_slots()].all()),
        )

    def anchored_base(self, slots: Slots, peaks: FloatArray) -> FloatArray:
        """``base_percent`` of ``slots`` read from their baselines' ``peaks`` instead."""
        return np.where(self.capacity[slots] > 0, peaks + self.rise[slots], 100.0)


class SlotLoadsCache:
    """``SlotLoads`` rebuilt only when the snapshot, the capacities or the slot layout change."""

    def __init__(self) -> None:
        self._arrays: tuple[np.ndarray, ...] = ()
        self._layout = (-1, -1)
        self._loads: SlotLoads | None = None

    def of(self, history: NodeHistory, capacity_millis: IntArray, table: NodeTable) -> SlotLoads:
        arrays = (history.peak, history.rise, history.measured, capacity_millis)
        layout = (table.capacity, table.slots_version)
        loads = self._loads
        same = len(arrays) == len(self._arrays) and all(
            new is old for new, old in zip(arrays, self._arrays, strict=True)
        )
        if loads is None or not same or layout != self._layout:
            loads = self._loads = SlotLoads.of(history, capacity_millis, table)
            self._arrays, self._layout = arrays, layout
        return loads
