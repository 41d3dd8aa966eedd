"""LoadAwarePacking in memory: estimation, in-flight accounting, peaks, packing, the filter, and
what it does when the metrics are stale or missing."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from pydantic import ValidationError
from tests.unit.plugins.loadawarepacking.world import CORES, PROMETHEUS, START, World, vm

from secondary_scheduler.framework import PodInfo
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.plugins.loadawarepacking.estimator import MIN_STEADY_READINGS
from secondary_scheduler.plugins.loadawarepacking.plugin import LoadAwarePacking
from secondary_scheduler.plugins.loadawarepacking.scoring import Spill, score_balanced, score_packed
from secondary_scheduler.plugins.registry import in_tree_registry

CAPACITY = CORES * 1000
NO_UNCERTAINTY = {"inflightUncertainty": 0}
"""For tests of another part's exact figures: the in-flight margin has its own test."""


def test_it_is_registered_in_tree() -> None:
    assert in_tree_registry()["LoadAwarePacking"] is LoadAwarePacking


def test_args_refuse_what_would_make_the_prediction_meaningless() -> None:
    with pytest.raises(ValidationError, match="parityMode"):
        validated_args(LoadAwarePacking, {**PROMETHEUS, "parityMode": True})
    with pytest.raises(ValidationError, match="hardThreshold 60 is below targetUtilization 70"):
        validated_args(LoadAwarePacking, {**PROMETHEUS, "hardThreshold": 60})
    with pytest.raises(ValidationError, match="only cpu"):
        validated_args(LoadAwarePacking, {**PROMETHEUS, "defaultRequests": {"memory": "1Gi"}})
    args = validated_args(LoadAwarePacking, PROMETHEUS)
    assert (args.target_utilization, args.hard_threshold, args.peak_percentile) == (70, None, 95.0)


async def test_a_class_is_learned_from_the_step_its_pods_make_on_a_node() -> None:
    world = World({"a": CORES, "b": CORES})
    world.cpu = {"a": (10.0, 0.0), "b": (10.0, 0.0)}
    await world.refresh()
    # Nothing learned: a VM with a CPU limit is predicted at its limit, one without at request x 1.5.
    _, note = world.score(vm("x", limit="1"))
    assert note.pod_millis == 1000 and "its CPU limit" in note.how_estimated
    _, note = world.score(vm("y"))
    assert note.pod_millis == pytest.approx(150)
    # Four small VMs start on a (enough to stand out of the node's noise); each really uses 700m
    # (7x its request). Meanwhile b, which took no pod, drifts up by a tenth (the daily wave):
    # a's own 10 % drifted as much, and that is not the VMs' doing.
    world.now += 60
    for name in ("s1", "s2", "s3", "s4"):
        world.place(vm(name, node_name="a", bound_at=world.now), "a")
    world.score(vm("z"))  # the cycle that opens a's learning group (baseline 10 %)
    world.now += 900 + 60  # a whole window later, all are wholly in the mean
    world.cpu["a"] = (11.0 + 100 * 2800 / CAPACITY, 0.0)
    world.cpu["b"] = (11.0, 0.0)
    await world.refresh()
    _, note = world.score(vm("s5"))
    assert note.pod_millis == pytest.approx(700)
    assert "learned" in note.how_estimated
    # An unseen flavour takes the mean of the learned classes, capped at its limit.
    _, note = world.score(vm("m1", flavor="medium", request="200m"))
    assert note.pod_millis == pytest.approx(1400)
    _, note = world.score(vm("m2", flavor="medium", request="200m", limit="1"))
    assert note.pod_millis == pytest.approx(1000)
    assert world.gauge("secsched_loadaware_lessons_total", profile_plugin="LoadAwarePacking") == 1


async def test_pods_bound_since_the_window_began_count_by_the_share_the_mean_lacks() -> None:
    world = World({"a": CORES}, NO_UNCERTAINTY)
    world.cpu = {"a": (0.0, 0.0)}
    await world.refresh()  # window [START - 900, START]
    lag = world.plugin.args.metrics_lag
    pod_millis = 1600  # 10 % of a node: a VM with a 1600m limit
    empty = world.predicted(vm("probe", limit="1600m", request="1600m"))["a"]
    assert empty == pytest.approx(10.0)
    # Bound before the window (and the lag): wholly in the mean, not added again.
    world.place(vm("old", node_name="a", bound_at=START - 900 - lag - 1, limit="1600m", request="1600m"), "a")
    assert world.predicted(vm("probe", limit="1600m", request="1600m"))["a"] == pytest.approx(10.0)
    # Bound mid-window: the mean holds half of it, so half is added.
    world.place(vm("mid", node_name="a", bound_at=START - 450 - lag, limit="1600m", request="1600m"), "a")
    assert world.predicted(vm("probe", limit="1600m", request="1600m"))["a"] == pytest.approx(15.0)
    # Assumed by this scheduler just now (no binding yet), then bound: counted once, in full.
    world.now += 5
    assumed = vm("new", limit="1600m", request="1600m")
    world.place(assumed, "a")
    with_new = world.predicted(vm("probe", limit="1600m", request="1600m"))["a"]
    margin = world.plugin.args.burst_margin * 10.0
    assert with_new == pytest.approx(25.0 + margin)
    world.table.remove_pod("vms/new")
    world.place(vm("new", node_name="a", bound_at=world.now + 1, limit="1600m", request="1600m"), "a")
    assert world.predicted(vm("probe", limit="1600m", request="1600m"))["a"] == pytest.approx(with_new)
    # Another scheduler's pod (created with nodeName, no PodScheduled condition) counts too.
    world.place(vm("other", node_name="a", created_at=world.now, limit="1600m", request="1600m"), "a")
    assert world.predicted(vm("probe", limit="1600m", request="1600m"))["a"] == pytest.approx(
        with_new + 10.0 + margin
    )
    # Once the metrics window has moved past them, they are in the mean and leave the index.
    world.now += 900 + lag + 60
    world.cpu["a"] = (40.0, 0.0)
    await world.refresh()
    assert world.predicted(vm("probe", limit="1600m", request="1600m"))["a"] == pytest.approx(
        40.0 + pod_millis * 100 / CAPACITY
    )


async def test_unmeasured_pods_of_unknown_spread_add_headroom_as_independent_draws() -> None:
    """Each in-flight pod of an unsteady class adds its unseen estimate x its class's spread (0.6
    while unknown), at most up to its limit, summed as the root of the squares and times
    ``inflightUncertainty``."""
    world = World({"a": CORES, "b": CORES, "c": CORES}, {"burstMargin": 0})
    world.cpu = {"a": (0.0, 0.0), "b": (0.0, 0.0), "c": (0.0, 0.0)}
    await world.refresh()
    z = world.plugin.args.inflight_uncertainty
    assert z == 2.0
    probe = vm("probe", request="0", limit="0")  # adds nothing itself
    after = START + 10  # bound after the window: wholly unseen
    share = 100 * 1000 * 1.5 / CAPACITY  # no limit, nothing learned: request x defaultUsageFactor
    world.place(vm("one", node_name="a", bound_at=after, request="1000m"), "a")
    for name in ("two", "three", "four"):
        world.place(vm(name, node_name="b", bound_at=after, request="1000m"), "b")
    # predicted at its limit (nothing learned yet): it cannot use more
    world.place(vm("capped", node_name="c", bound_at=after, request="1000m", limit="1500m"), "c")
    predicted = world.predicted(probe)
    assert predicted["a"] == pytest.approx(share + z * 0.6 * share)
    assert predicted["b"] == pytest.approx(3 * share + z * 0.6 * share * math.sqrt(3))
    assert predicted["c"] == pytest.approx(share)
    without = World({"a": CORES}, {"burstMargin": 0, **NO_UNCERTAINTY})
    without.cpu = {"a": (0.0, 0.0)}
    await without.refresh()
    without.place(vm("one", node_name="a", bound_at=after, request="1000m"), "a")
    assert without.predicted(probe)["a"] == pytest.approx(share)


async def test_the_score_reads_a_peak_not_the_mean() -> None:
    world = World({"steady": CORES, "spiky": CORES})
    world.cpu = {"steady": (55.0, 0.0), "spiky": (50.0, 10.0)}
    await world.refresh()
    predicted = world.predicted(vm("p", limit="800m"))
    # 95th percentile: mean + 1.645 stddev.
    assert predicted["spiky"] == pytest.approx(50 + 16.45 + 5, abs=0.01)
    assert predicted["steady"] == pytest.approx(60.0)
    scores, _ = world.score(vm("p", limit="800m"))
    assert scores["steady"] > scores["spiky"]  # lower mean, but its peaks cross the target
    # A spike seen one snapshot ago is still in the window's percentile at the next.
    world.now += 30
    world.cpu["spiky"] = (50.0, 0.0)
    await world.refresh()
    assert world.predicted(vm("p", limit="800m"))["spiky"] > 60


async def test_it_balances_under_the_target_and_never_crosses_it() -> None:
    world = World({"cold": CORES, "warm": CORES, "near": CORES, "hot": CORES}, NO_UNCERTAINTY)
    world.cpu = {"cold": (20.0, 0.0), "warm": (55.0, 0.0), "near": (68.0, 0.0), "hot": (95.0, 0.0)}
    await world.refresh()
    scores, _ = world.score(vm("p", limit="800m"))  # +5 %
    assert max(scores, key=scores.__getitem__) == "cold"  # the lowest predicted peak under 70 %
    assert scores["near"] < 50 <= scores["warm"] < scores["cold"]  # crossing always loses to fitting
    assert scores["hot"] < scores["near"]  # among hot nodes, the least hot
    # A burst of 20 % VMs: each one placed counts at once (no metrics show it yet), so the third
    # goes to warm (75 %, the least hot of all) rather than to cold, which looks 40 % without them.
    chosen = []
    for index in range(3):
        scores, _ = world.score(vm(f"b{index}", limit="3200m"))
        best = max(scores, key=scores.__getitem__)
        chosen.append(best)
        world.place(vm(f"b{index}", limit="3200m"), best)
    assert chosen == ["cold", "cold", "warm"]
    predicted = world.predicted(vm("probe", request="0", limit="0"))
    assert predicted["cold"] == pytest.approx(20 + 2 * 20 * (1 + 0.2))  # both, and their burst margin


async def test_pack_to_target_packs_once_a_class_is_learned_and_balances_before() -> None:
    world = World({"cold": CORES, "warm": CORES, "near": CORES}, {"scoringStrategy": "PackToTarget"})
    world.cpu = {"cold": (20.0, 0.0), "warm": (55.0, 0.0), "near": (68.0, 0.0)}
    await world.refresh()
    # Nothing learned: the pod's scale is a guess, and packing to a guess packs to an unknown.
    scores, _ = world.score(vm("p", limit="800m"))
    assert max(scores, key=scores.__getitem__) == "cold"
    world.plugin.estimator.learn([world.plugin.estimator.shape(PodInfo.from_pod(vm("x")))], 500.0)
    scores, _ = world.score(vm("p", limit="800m"))
    assert max(scores, key=scores.__getitem__) == "warm"  # the fullest node that stays under 70 %
    assert scores["near"] < 50 <= scores["cold"]
    with pytest.raises(ValidationError, match="scoringStrategy"):
        validated_args(LoadAwarePacking, {**PROMETHEUS, "scoringStrategy": "MostAllocated"})


async def test_the_filter_is_off_by_default_and_keeps_pods_under_the_hard_threshold() -> None:
    import numpy as np

    from secondary_scheduler.framework import CycleState, PodInfo

    for args, rejected in (({}, set()), ({"hardThreshold": 80}, {"hot"})):
        world = World({"ok": CORES, "hot": CORES}, args)
        world.cpu = {"ok": (50.0, 0.0), "hot": (78.0, 0.0)}
        await world.refresh()
        slots = np.array([world.table.slot_of("ok"), world.table.slot_of("hot")], dtype=np.intp)
        found = world.plugin.filter(CycleState(), PodInfo.from_pod(vm("p", limit="800m")), world.table, slots)
        names = {name for r in found for name, out in zip(("ok", "hot"), r.mask.tolist(), strict=True) if out}
        assert names == rejected
        assert all("hardThreshold (80%)" in r.reason for r in found)


async def test_stale_metrics_hold_the_last_peaks_and_say_so(caplog: pytest.LogCaptureFixture) -> None:
    world = World({"a": CORES, "b": CORES}, {"metricsStalenessLimit": "2m", **NO_UNCERTAINTY})
    world.cpu = {"a": (30.0, 0.0), "b": (60.0, 0.0)}
    await world.refresh()
    fresh, note = world.score(vm("p", limit="800m"))
    assert note.held_for_seconds is None
    world.down = True
    world.now += 600
    assert not await world.refresh()
    world.place(vm("q", node_name="a", bound_at=world.now - 10, limit="3200m"), "a")
    with caplog.at_level(logging.WARNING):
        scores, note = world.score(vm("p", limit="800m"))
    assert note.held_for_seconds == pytest.approx(600)
    assert any("stale" in line for line in note.lines())
    assert "stale" in caplog.text
    # Not zeros: the last peaks, plus the pod bound since in full, with the burst margin as it was
    # placed within burstWindow (a: 30 + 20 + 0.2 x 20 + 5 %).
    assert world.predicted(vm("p", limit="800m"))["a"] == pytest.approx(59.0)
    assert scores["b"] == fresh["b"] and scores["a"] != fresh["a"]
    labels = {"profile_plugin": "LoadAwarePacking", "reason": "stale-held"}
    assert world.gauge("secsched_loadaware_degraded_nodes", **labels) == 2
    # One Warning Event on the first pod placed on stale metrics, not one per pod; again after recovery.
    stale = [event for event in world.events if event[2] == "LoadMetricsStale"]
    assert [(name, kind) for name, kind, _, _ in stale] == [("p", "Warning")]
    assert "600s old (metricsStalenessLimit 120s)" in stale[0][3]
    world.down = False
    assert await world.refresh()
    world.score(vm("r", limit="800m"))
    world.down = True
    world.now += 600
    assert not await world.refresh()
    world.score(vm("s", limit="800m"))
    assert [e[0] for e in world.events if e[2] == "LoadMetricsStale"] == ["p", "s"]


async def test_a_node_without_metrics_is_estimated_from_its_requests_visibly() -> None:
    world = World({"a": CORES, "silent": CORES})
    world.cpu = {"a": (30.0, 0.0)}
    world.place(vm("s1", node_name="silent", bound_at=START - 5000, request="1600m"), "silent")
    await world.refresh()
    predicted = world.predicted(vm("p", limit="800m"))
    assert predicted["silent"] == pytest.approx(100 * 1600 * 1.5 / CAPACITY + 5)
    _, note = world.score(vm("p", limit="800m"))
    assert note.estimated == ("silent",)
    assert any("no CPU reading, load from requests" in line for line in note.lines())
    labels = {"profile_plugin": "LoadAwarePacking"}
    assert world.gauge("secsched_loadaware_degraded_nodes", **labels, reason="no-metrics-estimated") == 1
    # One Warning Event naming the node and what was done instead (the predict above was the first pod).
    missing = [event for event in world.events if event[2] == "LoadMetricsMissing"]
    assert len(missing) == 1 and missing[0][1] == "Warning"
    assert "1 node(s) without a CPU reading from Prometheus http://prom:9090 (silent)" in missing[0][3]
    assert "CPU requests x 1.50" in missing[0][3]
    # fallbackToRequests: false scores it 0, and says so.
    strict = World({"a": CORES, "silent": CORES}, {"fallbackToRequests": False})
    strict.cpu = {"a": (30.0, 0.0)}
    await strict.refresh()
    scores, note = strict.score(vm("p", limit="800m"))
    assert scores["silent"] == 0 and note.unscored == ("silent",)
    assert [e[3].endswith("): scored 0 (fallbackToRequests: false)") for e in strict.events] == [True]
    assert strict.gauge("secsched_loadaware_degraded_nodes", **labels, reason="no-metrics-unscored") == 1


async def test_before_any_snapshot_every_node_is_estimated_not_zero() -> None:
    world = World({"a": CORES, "b": CORES})
    world.place(vm("s1", node_name="a", bound_at=START - 5000, request="8"), "a")
    scores, note = world.score(vm("p", limit="800m"))
    assert scores["a"] < 50 <= scores["b"]  # a: 8 cores x 1.5 = 75 % + the pod, over the target
    assert set(note.estimated) == {"a", "b"}


async def test_a_pod_assumed_then_bound_still_teaches_but_one_that_left_does_not() -> None:
    """The scheduler assumes a pod, then its binding replaces it in the table: no departure. (Every
    group was once dropped as disturbed there, so nothing was ever learned in a live scheduler.)"""
    for leaves in (False, True):
        world = World({"a": CORES, "b": CORES})
        world.cpu = {"a": (10.0, 0.0), "b": (10.0, 0.0)}
        await world.refresh()
        world.score(vm("probe"))  # takes the snapshot in: a's baseline is known
        world.now += 60
        pods = [vm(f"s{i}") for i in range(4)]
        for pod in pods:
            world.place(pod, "a")  # assumed: no binding yet
        for pod in pods:
            world.table.remove_pod(f"vms/{pod['metadata']['name']}")
            world.place({**pod, "spec": {**pod["spec"], "nodeName": "a"}}, "a")  # the bound pod
        if leaves:
            world.table.remove_pod("vms/s0")
        world.now += 900 + 60
        world.cpu = {"a": (10.0 + 100 * 2800 / CAPACITY, 0.0), "b": (10.0, 0.0)}
        await world.refresh()
        world.score(vm("probe"))
        lessons = world.gauge("secsched_loadaware_lessons_total", profile_plugin="LoadAwarePacking")
        assert lessons == (None if leaves else 1), leaves


def daemon_pod(name: str, node_name: str) -> dict[str, object]:
    pod = vm(name, node_name=node_name, bound_at=START - 3600)
    pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "exporter", "controller": True}]  # type: ignore[index]
    return pod


@pytest.mark.parametrize(
    ("used_percent", "cost", "winner"), [(5.0, 10.0, "used"), (5.0, 0.0, "empty"), (30.0, 10.0, "empty")]
)
async def test_balance_fills_nodes_in_use_by_the_opening_cost_before_opening_another(
    used_percent: float, cost: float, winner: str
) -> None:
    world = World({"used": CORES, "empty": CORES}, {"openingCost": cost})
    world.place(vm("old", node_name="used", bound_at=START - 3600), "used")
    world.place(daemon_pod("exporter-empty", "empty"), "empty")  # a DaemonSet's pod: still empty
    world.cpu = {"used": (used_percent, 0.0), "empty": (0.0, 0.0)}
    await world.refresh()
    scores, _ = world.score(vm("p", limit="800m"))  # +5 %
    assert max(scores, key=scores.__getitem__) == winner


def test_nodes_predicted_far_over_the_target_do_not_tie_with_nodes_just_over_it() -> None:
    predicted = np.array([69.0, 71.0, 95.0, 100.0, 130.0, 250.0, 1000.0])
    for score in (score_balanced(predicted, 70), score_packed(predicted, 70)):
        assert score[0] >= 50 > score[1]  # crossing loses to fitting
        assert list(score[1:]) == sorted(score[1:], reverse=True)
        assert score[1] > score[2] > score[3] > score[4] > score[5]  # no floor of 0 at 100 %


def test_a_packed_pod_that_fits_nowhere_goes_to_a_node_already_over_the_target_under_the_ceiling() -> None:
    #          fits   pushed over: 70.5 and 72   already over: 75 and 80, 88 past the ceiling
    predicted = np.array([69.0, 70.5, 72.0, 75.0, 80.0, 88.0, 130.0, 250.0])
    crossing = np.flatnonzero(predicted > 70)
    score = score_packed(predicted, 70, Spill(crossing, hot=np.array([3, 4, 5]), ceiling=85.0))
    assert score[0] >= 50 > score[3] > score[4] >= 25  # fitting first, then the least loaded hot node
    assert 25 > score[1] > score[2] > score[5] > score[6] > score[7]  # then the usual crossing order
    assert list(score_packed(predicted, 70, Spill(crossing, np.array([], dtype=np.intp), 85.0))) == list(
        score_packed(predicted, 70)
    )
    with pytest.raises(ValidationError, match="spillCeiling"):
        validated_args(LoadAwarePacking, {**PROMETHEUS, "spillCeiling": 60})


async def test_pack_to_target_sends_a_pod_that_fits_nowhere_to_the_node_already_over() -> None:
    world = World({"full": CORES, "hot": CORES}, {"scoringStrategy": "PackToTarget"})
    world.cpu = {"full": (68.0, 0.0), "hot": (74.0, 0.0)}
    await world.refresh()
    world.plugin.estimator.learn([world.plugin.estimator.shape(PodInfo.from_pod(vm("x")))], 500.0)
    scores, _ = world.score(vm("p", limit="800m"))
    assert max(scores, key=scores.__getitem__) == "hot"  # "full" would be pushed over; "hot" is over


async def test_a_burst_on_a_source_with_little_history_is_counted_once_and_taught_at_once() -> None:
    """The live bench's regime: Prometheus holds 2 minutes, not the 15 the window says.

    Its mean then shows half of a burst a minute after it, and its deviation the burst's step:
    read as a 15-minute window, that counted the burst nearly twice, nothing was learned before
    15 minutes had passed, and a burst of VMs using 70 % of their limits filled the cluster in
    the plugin's eyes long before it was full.
    """
    world = World({"a": CORES, "b": CORES}, NO_UNCERTAINTY)
    noise = 0.5  # the source already holds a minute of samples: the nodes' noise shows
    world.cpu = {"a": (10.0, noise), "b": (10.0, noise)}
    await world.refresh()
    peak = 10.0 + 1.6449 * noise  # the 95th percentile of the reading
    lag = world.plugin.args.metrics_lag
    world.now += 1
    for name in ("s1", "s2", "s3", "s4"):  # 1 vCPU each (limit 1), really using 700m
        world.place(vm(name, limit="1", node_name="a", bound_at=world.now), "a")
    probe = vm("probe", request="0", limit="0")
    assert world.predicted(probe)["a"] == pytest.approx(peak + 100 * 4 * 1000 * 1.2 / CAPACITY, rel=1e-4)
    # 60 s after the step shows (bound + lag), in a source that began 120 s before the reading:
    # the step is half the data. Mean and deviation as Prometheus computes them over what it holds.
    world.now += lag + 60
    step = 100 * 4 * 700 / CAPACITY
    world.cpu["a"] = (10.0 + step / 2, math.hypot(step / 2, noise))
    await world.refresh()
    _, note = world.score(vm("s5", limit="1"))
    assert note.pod_millis == pytest.approx(700, rel=0.01)  # learned at the first snapshot, not 15 minutes on
    assert note.anchored == ("a",) and any(line.startswith("read from before") for line in note.lines())
    # Counted once: the node's reading before the burst plus the burst's use, not the window's
    # mean (which holds half of it), its deviation (which is the step) and the burst again.
    assert world.predicted(probe)["a"] == pytest.approx(peak + step, rel=0.01)
    assert world.gauge("secsched_loadaware_lessons_total", profile_plugin="LoadAwarePacking") == 1


async def test_a_baseline_of_one_sample_is_read_again_from_the_data_since() -> None:
    """A source that just started holds one sample per node: the mean is that sample (here a
    point under the node's 10 %), the deviation 0. A node anchored on it and packed to the target
    ends over by that point; every later window holds the samples since, before the pods show
    and after (less the pods' share of them), so the node is read again from those."""
    world = World({"a": CORES, "b": CORES}, NO_UNCERTAINTY)
    world.cpu = {"a": (9.0, 0.0), "b": (50.0, 0.0)}  # one sample each
    await world.refresh()
    lag = world.plugin.args.metrics_lag
    taken = world.now
    world.now += 1
    bound = world.now
    for name in ("s1", "s2", "s3", "s4"):  # 1 vCPU each (limit 1), really using 700m
        world.place(vm(name, limit="1", node_name="a", bound_at=bound), "a")
    probe = vm("probe", request="0", limit="0")
    in_full = 100 * 4 * 1000 * 1.2 / CAPACITY  # their limits, with the burst margin
    assert world.predicted(probe)["a"] == pytest.approx(9.0 + in_full)
    # Before the pods show: the window is the node alone, over more samples.
    world.now = bound + lag - 1
    world.cpu = {"a": (10.0, 1.0), "b": (50.0, 1.0)}
    await world.refresh()
    assert world.predicted(probe)["a"] == pytest.approx(10.0 + in_full)
    # Once they show: the node is the mean less their share of the data since the one sample.
    world.now = bound + lag + 29
    shown = 29 / (world.now - taken)
    step = 100 * 4 * 700 / CAPACITY
    world.cpu = {
        "a": (10.0 + step * shown, math.hypot(step * math.sqrt(shown * (1 - shown)), 1.0)),
        "b": (50.0, 1.0),
    }
    await world.refresh()
    predicted = world.predicted(probe)["a"]  # (the snapshot is taken in by the first cycle after it)
    estimator = world.plugin.estimator
    each = 100 * estimator.estimate_one(estimator.shape(PodInfo.from_pod(vm("s5", limit="1")))) / CAPACITY
    before = 10.0 + step * shown - 4 * each * shown
    assert predicted == pytest.approx(before + 4 * each)
    assert abs(before - 10.0) < 0.25  # the estimates learned from that step are near the truth


async def test_the_drift_of_other_pods_is_read_over_the_same_quiet_nodes() -> None:
    """Once the score keeps pods off the busiest nodes, they are most of what stays quiet: their
    level is no drift of the nodes that took pods (it read as 2x here, and taught ~0)."""
    world = World({"a": CORES, "b": CORES, "hot": CORES})
    world.cpu = {"a": (20.0, 0.0), "b": (20.0, 0.0), "hot": (80.0, 0.0)}
    await world.refresh()
    world.score(vm("first"))  # the first snapshot taken in: every node quiet
    world.now += 60
    for node_name in ("a", "b"):
        for index in range(4):
            name = f"{node_name}{index}"
            world.place(vm(name, node_name=node_name, bound_at=world.now), node_name)
    world.now += 900 + 60
    step = 100 * 4 * 700 / CAPACITY
    world.cpu = {"a": (20.0 + step, 0.0), "b": (20.0 + step, 0.0), "hot": (80.0, 0.0)}
    await world.refresh()
    _, note = world.score(vm("s5"))
    assert note.pod_millis == pytest.approx(700)


async def test_a_node_is_predicted_alike_whichever_nodes_are_scored_with_it() -> None:
    """The prediction is worked per table slot and gathered for the scored nodes: a node's figure
    and its note must not depend on which other nodes the cycle scores, nor on their order
    (anchored, in-flight, estimated and unmeasured nodes included)."""
    world = World({"a": CORES, "b": CORES, "c": 2 * CORES, "silent": CORES, "d": CORES})
    world.cpu = {"a": (30.0, 2.0), "b": (50.0, 0.0), "c": (10.0, 1.0), "d": (65.0, 3.0)}
    world.place(vm("old", node_name="silent", bound_at=START - 5000, request="1600m"), "silent")
    await world.refresh()
    world.now += 30
    world.place(vm("new-a", limit="1", node_name="a", bound_at=world.now), "a")  # anchored
    world.place(vm("new-d", limit="2", node_name="d", bound_at=world.now - 600), "d")  # in flight only
    pod = PodInfo.from_pod(vm("p", limit="800m"))
    table = world.table
    everyone = np.array([table.slot_of(name) for name in ("a", "b", "c", "silent", "d")], dtype=np.intp)
    whole = world.plugin.predict(pod, table, everyone)
    for subset in (["d", "a"], ["silent"], ["c", "silent", "a"], ["b"]):
        slots = np.array([table.slot_of(name) for name in subset], dtype=np.intp)
        part = world.plugin.predict(pod, table, slots)
        at = [list(everyone).index(slot) for slot in slots]
        assert part.percent.tolist() == whole.percent[at].tolist()
        assert part.note.missing_millis.tolist() == whole.note.missing_millis[at].tolist()
        assert set(part.note.anchored) == set(whole.note.anchored) & set(subset)
        assert set(part.note.estimated) == set(whole.note.estimated) & set(subset)
    assert whole.note.anchored == ("a",) and whole.note.estimated == ("silent",)
    assert whole.note.missing_millis[[0, 4]].min() > 0


async def test_open_groups_are_read_again_at_every_snapshot_until_a_lesson_settles() -> None:
    """A group's first reading comes when its pods have shown for seconds: on the live bench the
    first snapshot read the VMs ~10 % high at the median, later ones 1-2 %. So each snapshot's
    reading of an open group replaces its last, a class is predicted from every open group's
    latest reading pooled, and a lesson from a group wholly in the window supersedes them."""
    world = World({"a": CORES, "b": CORES, "quiet": CORES})
    world.cpu = {"a": (10.0, 0.0), "b": (10.0, 0.0), "quiet": (10.0, 0.0)}
    await world.refresh()
    world.score(vm("first"))  # the first snapshot taken in: the groups' baselines
    lag = world.plugin.args.metrics_lag
    world.now += 1
    for node_name in ("a", "b"):
        for index in range(4):  # small VMs of 100m requests
            name = f"{node_name}{index}"
            world.place(vm(name, limit="1", node_name=node_name, bound_at=world.now), node_name)

    def step(use_each: float, share: float) -> tuple[float, float]:
        """A node's (mean, deviation) in percent, four VMs using ``use_each`` having shown for
        ``share`` of the data the source holds (a one-step series)."""
        height = 100 * 4 * use_each / CAPACITY
        return 10.0 + height * share, height * (share * (1 - share)) ** 0.5

    world.now += lag + 60
    world.cpu["a"] = step(900, 0.5)  # the first reading of a, high; b shows nothing yet
    await world.refresh()
    _, note = world.score(vm("probe1", limit="1"))
    assert note.pod_millis == pytest.approx(900, rel=0.01)
    assert "read from its open groups" in note.how_estimated
    world.now += 30
    world.cpu["a"], world.cpu["b"] = step(800, 0.6), step(600, 0.6)
    await world.refresh()
    _, note = world.score(vm("probe2", limit="1"))
    assert note.pod_millis == pytest.approx(700, rel=0.01)  # a's 800 replaced its 900; pooled with b's 600
    world.now += 900 + 60
    world.cpu["a"], world.cpu["b"] = step(750, 1.0), step(750, 1.0)
    await world.refresh()
    _, note = world.score(vm("probe3", limit="1"))
    assert note.pod_millis == pytest.approx(750, rel=0.01)
    assert "(learned)" in note.how_estimated


async def test_adaptive_packs_a_steady_class_and_balances_one_whose_pods_use_alike_nowhere() -> None:
    """Balance keeps headroom on every node for what a VM's unknown level may be; where a class's
    readings agree (identical VMs), that headroom is only holes too small for the largest VMs
    (live bench: the last large VMs crossed the target), so its pods are packed, without margin."""
    world = World({"cold": CORES, "warm": CORES, "near": CORES})
    world.cpu = {"cold": (20.0, 0.0), "warm": (55.0, 0.0), "near": (68.0, 0.0)}
    await world.refresh()
    estimator = world.plugin.estimator
    steady = estimator.shape(PodInfo.from_pod(vm("s", flavor="small")))
    spread = estimator.shape(PodInfo.from_pod(vm("w", flavor="wavy")))
    for index in range(MIN_STEADY_READINGS - 1):
        estimator.learn([steady], 700.0 * (1.02 if index % 2 else 0.98))
        estimator.learn([spread], 300.0 if index % 2 else 1100.0)
    # One reading short of enough: a few agreeing readings are chance, so it still balances.
    scores, note = world.score(vm("p1", flavor="small"))
    assert max(scores, key=scores.__getitem__) == "cold" and "steady" not in note.how_estimated
    estimator.learn([steady], 700.0)
    estimator.learn([spread], 700.0)
    scores, note = world.score(vm("p2", flavor="small"))
    assert max(scores, key=scores.__getitem__) == "warm"  # packed: the fullest node that stays under
    assert "steady, spread 2%" in note.how_estimated
    scores, note = world.score(vm("p3", flavor="wavy"))
    assert max(scores, key=scores.__getitem__) == "cold"
    assert "spread" in note.how_estimated and "steady" not in note.how_estimated  # ~50 %
    # A steady pod just placed counts its estimate alone; one of the spread class its burst margin
    # and its class's spread (inflightUncertainty deviations) too.
    probe = vm("probe", request="0", limit="0")
    world.place(vm("p2", flavor="small"), "warm")
    world.place(vm("p3", flavor="wavy"), "cold")
    predicted = world.predicted(probe)
    assert predicted["warm"] == pytest.approx(55 + 100 * estimator.estimate_one(steady) / CAPACITY)
    deviations = world.plugin.args.inflight_uncertainty * estimator.spreads()[spread.class_id]
    assert deviations > 0.5
    assert predicted["cold"] == pytest.approx(
        20 + 100 * (1.2 + deviations) * estimator.estimate_one(spread) / CAPACITY
    )
    with pytest.raises(ValidationError, match="steadySpread"):
        validated_args(LoadAwarePacking, {**PROMETHEUS, "steadySpread": 0})


async def test_balance_and_pack_to_target_are_kept_whatever_the_spread() -> None:
    for strategy, expected in (("Balance", "cold"), ("PackToTarget", "warm")):
        world = World({"cold": CORES, "warm": CORES}, {"scoringStrategy": strategy})
        world.cpu = {"cold": (20.0, 0.0), "warm": (55.0, 0.0)}
        await world.refresh()
        estimator = world.plugin.estimator
        shape = estimator.shape(PodInfo.from_pod(vm("s")))
        for _ in range(MIN_STEADY_READINGS):
            estimator.learn([shape], 700.0)
        scores, _ = world.score(vm("p"))
        assert max(scores, key=scores.__getitem__) == expected
