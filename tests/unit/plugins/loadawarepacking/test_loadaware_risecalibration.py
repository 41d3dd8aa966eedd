"""The seasonal rise weighed by how well it foretold the hours that came."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from tests.unit.plugins.loadawarepacking.world import CORES, START, World, node, vm

from secondary_scheduler.framework import NodeTable, PodInfo
from secondary_scheduler.plugins.loadawarepacking.history import HOUR, NodeHistory
from secondary_scheduler.plugins.loadawarepacking.inflight import Window
from secondary_scheduler.plugins.loadawarepacking.recentplacements import RecentPlacements
from secondary_scheduler.plugins.loadawarepacking.risecalibration import (
    DECAY,
    MIN_PAIRS,
    RiseCalibration,
    RiseFit,
)

NODES = 300


def _came(means: np.ndarray, k: int, hours: int) -> np.ndarray:
    """What a forecast made at hour ``k`` sees come within ``hours``: the highest mean, less its own."""
    return means[k : k + hours + 1].max(axis=0) - means[k]


def test_a_rise_that_comes_true_keeps_its_whole_weight() -> None:
    calibration = RiseCalibration(horizon=2 * HOUR)
    rng = np.random.default_rng(1)
    base = rng.uniform(10, 40, NODES)
    morning = rng.uniform(0, 30, NODES)  # each node's own height of its 08:00-10:00 peak
    means = np.array([base + morning * (8 <= k % 24 < 10) for k in range(72 + 3)])
    patterned = np.ones(NODES, dtype=np.bool_)
    for k in range(72):
        calibration.observe(k * HOUR, means[k], _came(means, k, 2), patterned)
    fit = calibration.fit
    assert fit is not None and fit.pairs >= MIN_PAIRS
    assert fit.slope == pytest.approx(1.0)
    assert fit.offset == pytest.approx(0.0, abs=1e-9)
    weighed = calibration.calibrated(np.array([0.0, 25.0]), np.ones(2, dtype=np.bool_))
    assert weighed.tolist() == pytest.approx([0.0, 25.0])


def test_a_rise_that_foretells_nothing_is_replaced_by_what_came_on_average() -> None:
    calibration = RiseCalibration(horizon=2 * HOUR)
    rng = np.random.default_rng(2)
    # every node alternates 50 % and 60 % hour by hour, whatever its remembered rise says
    means = np.array([np.full(NODES, 50.0 + 10.0 * (k % 2)) for k in range(72)])
    patterned = np.ones(NODES, dtype=np.bool_)
    for k in range(72):
        calibration.observe(k * HOUR, means[k], rng.uniform(0, 40, NODES), patterned)
    fit = calibration.fit
    assert fit is not None
    assert fit.slope < 0.05
    assert fit.offset == pytest.approx(5.0, abs=0.6)  # half the hours rise 10 points, half none
    weighed = calibration.calibrated(np.array([0.0, 40.0]), np.ones(2, dtype=np.bool_))
    assert weighed[1] - weighed[0] < 2.0


def test_a_reading_past_the_horizon_is_not_what_the_forecast_foretold() -> None:
    """Snapshots are fed at scheduling cycles: after a quiet night the next may come hours late."""
    calibration = RiseCalibration(horizon=2 * HOUR)
    patterned = np.ones(NODES, dtype=np.bool_)
    calibration.observe(0.0, np.full(NODES, 20.0), np.zeros(NODES), patterned)
    calibration.observe(HOUR, np.full(NODES, 20.0), np.zeros(NODES), patterned)
    calibration.observe(5 * HOUR, np.full(NODES, 50.0), np.zeros(NODES), patterned)
    count, _, came, _, _ = calibration._sums.tolist()
    assert count == pytest.approx(NODES * DECAY + NODES)  # both came true at 5 h, without its reading
    assert came == 0.0


def test_what_pods_placed_after_a_forecast_show_is_not_taken_for_its_rise() -> None:
    """Balance sends the next pods to the nodes it predicted lowest: their use, in the mean a day
    later, is not a rise of the pods the forecast was about."""
    weighed = RiseCalibration(horizon=2 * HOUR)
    raw = RiseCalibration(horizon=2 * HOUR)
    rng = np.random.default_rng(3)
    base = rng.uniform(10, 40, NODES)
    patterned = np.ones(NODES, dtype=np.bool_)
    for k in range(72):
        now = k * HOUR
        means = base + 5.0 * k  # 5 points of new pods every hour, the old ones flat

        def placed_since(when: float, now: float = now) -> np.ndarray:
            return np.full(NODES, 5.0 * (now - when) / HOUR)

        remembered = rng.uniform(0, 30, NODES)
        weighed.observe(now, means, remembered, patterned, placed_since)
        raw.observe(now, means, remembered, patterned)
    assert raw.fit is not None and raw.fit.offset == pytest.approx(10.0, abs=0.5)  # two hours of new pods
    assert weighed.fit is not None and weighed.fit.offset == pytest.approx(0.0, abs=1e-9)
    assert weighed.fit.slope == pytest.approx(0.0, abs=1e-9)


async def test_recent_placements_show_what_the_window_holds_of_pods_placed_after_a_time() -> None:
    world = World({"a": CORES, "b": CORES})
    recent = RecentPlacements(world.table, world.plugin.estimator, lambda: world.now, keep=2 * HOUR)
    capacity = np.zeros(world.table.capacity)
    a, b = world.table.slot_of("a"), world.table.slot_of("b")
    capacity[[a, b]] = CORES * 1000.0
    lag = world.plugin.args.metrics_lag

    def placed(name: str, node_name: str, slot: int, bound_at: float) -> PodInfo:
        info = world.place(vm(name, node_name=node_name, bound_at=bound_at, limit="1600m"), node_name)
        recent.pod_placed(slot, info, {})  # 10 % of a node: its limit before anything is learned
        return info

    placed("early", "a", a, START - HOUR)
    placed("half", "a", a, START - 450 - lag)
    gone = placed("gone", "b", b, START - 1000)
    placed("old", "b", b, START - 3 * HOUR)
    recent.pod_removed(b, gone, {})
    placed_since = recent.placed_since(START, Window(START - 900, START), capacity)
    assert placed_since(START - 2 * HOUR)[[a, b]].tolist() == pytest.approx([15.0, 0.0])
    assert placed_since(START - 1800)[[a, b]].tolist() == pytest.approx([5.0, 0.0])  # half in the window
    assert len(recent) == 2  # "old" is past the horizon, "gone" left
    # Preemption's dry runs remove and re-add pods: the rows they leave behind are dropped.
    half = next(info for info, _ in world.table.all_pods() if info.name == "half")
    for _ in range(1100):
        recent.pod_removed(a, half, {})
        recent.pod_placed(a, half, {})
    placed_since = recent.placed_since(START, Window(START - 900, START), capacity)
    assert placed_since(START - 1800)[[a, b]].tolist() == pytest.approx([5.0, 0.0])  # its bind time kept
    assert len(recent._slot) == 2


def test_until_enough_hours_came_true_the_rise_is_as_remembered() -> None:
    calibration = RiseCalibration(horizon=2 * HOUR)
    patterned = np.ones(10, dtype=np.bool_)
    for k in range(12):  # 10 nodes x 10 hours come true: under MIN_PAIRS
        calibration.observe(k * HOUR, np.full(10, 30.0), np.full(10, 20.0), patterned)
    assert calibration.fit is None
    rise = np.array([3.0, 17.0])
    assert calibration.calibrated(rise, np.ones(2, dtype=np.bool_)) is rise


def test_only_nodes_with_a_pattern_and_a_reading_test_it_and_a_slot_given_to_another_node_neither() -> None:
    calibration = RiseCalibration(horizon=HOUR)
    patterned = np.array([True, True, False, True])
    means = np.array([10.0, 10.0, 10.0, np.nan])
    calibration.observe(0.0, means, np.zeros(4), patterned)
    calibration.forget(1)
    calibration.observe(HOUR + 1.0, means, np.zeros(4), patterned)  # past the horizon: it came true
    assert calibration._sums[0] == 1.0  # slot 0 only: 1 was forgotten, 2 has no pattern, 3 no reading


def test_a_node_whose_morning_peak_stopped_is_no_longer_predicted_to_rise() -> None:
    """Through NodeHistory: a fleet's 08:00 peak stops on day 2 (its pods left); from day 3 the
    remembered rise still says 30 points, and the fit, having seen that rise not come, weighs it
    down."""
    table = NodeTable.from_objects([node(f"n{i}") for i in range(NODES)])
    history = NodeHistory(percentile=95, window=900, seasonal=True, horizon=2 * HOUR)
    size = table.capacity
    valid = np.zeros(size, dtype=np.bool_)
    slots = np.array([table.slot_of(f"n{i}") for i in range(NODES)])
    valid[slots] = True
    day0 = 1_700_006_400.0 - (1_700_006_400.0 % 86400)
    for hour in range(4 * 24 + 7):
        avg = np.zeros(size)
        avg[slots] = 80.0 if hour < 48 and 8 <= hour % 24 < 10 else 20.0
        history.record(table, day0 + hour * HOUR, avg, np.zeros(size), valid)
    fit = history.calibration.fit
    assert fit is not None and fit.slope < 0.5
    remembered = 30.0  # 60 points blended with a day without the peak
    assert history.rise[slots[0]] < remembered / 2


async def test_the_note_says_how_the_rises_are_weighed() -> None:
    fit = RiseFit(offset=13.4, slope=0.14, pairs=5462)
    assert str(fit) == "+13.4pp + 0.14 x remembered (5462 node-hours)"
    world = World({"a": CORES})
    world.cpu = {"a": (30.0, 0.0)}
    await world.refresh()
    _, note = world.score(vm("p", limit="800m"))
    rising = np.full(len(note.rise_by_slot), 12.0)
    weighed = replace(note, rise_by_slot=rising, rise_fit=fit)
    line = next(line for line in weighed.lines() if "pattern" in line)
    assert line == "daily/weekly pattern, rise ahead: a +12pp (weighed by what came: " + str(fit) + ")"
    assert not any("weighed" in line for line in replace(note, rise_by_slot=rising).lines())
