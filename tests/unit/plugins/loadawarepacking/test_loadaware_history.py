"""Each node's window peak and its daily pattern, over a hand-made history."""

from __future__ import annotations

import numpy as np
import pytest
from tests.unit.plugins.loadawarepacking.world import node

from secondary_scheduler.framework import NodeTable
from secondary_scheduler.plugins.loadawarepacking.history import HOUR, NodeHistory, z_of


def test_z_of_a_percentile() -> None:
    assert z_of(95) == pytest.approx(1.6449, abs=1e-4)
    assert z_of(50) == pytest.approx(0.0)


def test_a_morning_peak_seen_on_previous_days_is_added_before_it_comes() -> None:
    table = NodeTable.from_objects([node("daily"), node("flat")])
    history = NodeHistory(percentile=95, window=900, seasonal=True, horizon=2 * HOUR)
    size = table.capacity
    valid = np.zeros(size, dtype=np.bool_)
    daily, flat = table.slot_of("daily"), table.slot_of("flat")
    assert daily is not None and flat is not None
    valid[[daily, flat]] = True
    day0 = 1_700_006_400.0 - (1_700_006_400.0 % 86400)  # midnight
    for day in range(3):
        for hour in range(24):
            now = day0 + day * 86400 + hour * HOUR
            avg = np.zeros(size)
            avg[daily] = 80.0 if 8 <= hour < 10 else 20.0
            avg[flat] = 40.0
            history.record(table, now, avg, np.zeros(size), valid)
    # Day 3, 07:00: the 08:00-09:00 peak is an hour away.
    now = day0 + 3 * 86400 + 7 * HOUR
    avg = np.zeros(size)
    avg[daily], avg[flat] = 20.0, 40.0
    history.record(table, now, avg, np.zeros(size), valid)
    peak, rise, measured = history.gather(np.array([daily, flat]))
    assert rise.tolist() == pytest.approx([60.0, 0.0])
    assert peak.tolist() == pytest.approx([20.0, 40.0])
    assert measured.all()


def test_without_a_day_of_history_there_is_no_pattern() -> None:
    table = NodeTable.from_objects([node("n")])
    history = NodeHistory(percentile=95, window=900, seasonal=True, horizon=2 * HOUR)
    valid = np.ones(table.capacity, dtype=np.bool_)
    for step in range(10):
        avg = np.full(table.capacity, 10.0 + 5 * step)
        history.record(table, 1_700_000_000.0 + step * 600, avg, np.zeros(table.capacity), valid)
    assert history.rise[table.slot_of("n")] == 0.0
