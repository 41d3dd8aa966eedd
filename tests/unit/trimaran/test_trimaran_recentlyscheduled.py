"""The recently-scheduled cache: bind-time stamps, start-up without double counting, parity stamping."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.plugins.trimaran import recentlyscheduled
from secondary_scheduler.plugins.trimaran.notes import read_note
from secondary_scheduler.plugins.trimaran.providers.static import StaticProvider
from secondary_scheduler.plugins.trimaran.recentlyscheduled import RecentlyScheduled
from secondary_scheduler.plugins.trimaran.services import SERVICE, TrimaranServices
from secondary_scheduler.plugins.trimaran.targetloadpacking.plugin import TargetLoadPacking
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

END = 1_700_000_000
MakeSnapshot = Callable[..., WatcherMetrics]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pod(name: str, node: str = "", cpu: str = "300m", scheduled_at: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }
    if node:
        obj["spec"]["nodeName"] = node
    if scheduled_at is not None:
        obj["status"] = {
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled_at}]
        }
    return obj


def stamps(cache: RecentlyScheduled, parity: bool = False) -> dict[str, float | None]:
    return {
        entry.pod["metadata"]["name"]: entry.stamp(parity)
        for _, entries in cache.on_nodes()
        for entry in entries
    }


def test_the_bind_hook_stamps_the_bind_time_and_the_informer_keeps_it() -> None:
    clock = Clock(END + 100)
    cache = RecentlyScheduled(TrimaranMetrics(), clock=clock)
    cache.record(PodInfo.from_pod(pod("a")), "node-1", timestamp=END + 5)
    cache.record(pod("b"), "node-2")
    clock.now = END + 200
    cache.event("MODIFIED", pod("a", "node-1", scheduled_at="2023-11-14T22:13:30Z"))
    assert stamps(cache) == {"a": END + 5, "b": END + 100}


def test_start_up_does_not_stamp_existing_pods_now() -> None:
    """Upstream stamps every pod "now" at start-up; we use PodScheduled's time, or none (old)."""
    cache = RecentlyScheduled(TrimaranMetrics(), clock=Clock(END + 3600))
    cache.replace(
        [
            pod("bound-by-a-scheduler", "node-1", scheduled_at="2023-11-14T22:13:20Z"),
            pod("created-with-node-name", "node-1"),
            pod("pending"),
        ]
    )
    assert stamps(cache) == {"bound-by-a-scheduler": END, "created-with-node-name": None}
    assert stamps(cache, parity=True) == {
        "bound-by-a-scheduler": END + 3600,
        "created-with-node-name": END + 3600,
    }


def test_deleted_and_relisted_away_pods_leave() -> None:
    cache = RecentlyScheduled(TrimaranMetrics(), clock=Clock(END))
    cache.replace([pod("a", "n"), pod("b", "n"), pod("c", "m")])
    cache.event("DELETED", pod("a", "n"))
    assert sorted(stamps(cache)) == ["b", "c"]
    cache.replace([pod("c", "m")])
    assert sorted(stamps(cache)) == ["c"] and len(cache) == 1


def test_old_entries_are_dropped_every_five_minutes() -> None:
    clock = Clock(END)
    telemetry = TrimaranMetrics()
    cache = RecentlyScheduled(telemetry, clock=clock)
    cache.record(pod("old"), "n", timestamp=END)
    clock.now = END + 260
    cache.record(pod("new"), "n", timestamp=END + 260)
    assert sorted(stamps(cache)) == ["new", "old"]  # not five minutes since the last clean-up yet
    clock.now = END + 300
    assert sorted(stamps(cache)) == ["new"]  # "old" is 300 s old, "new" 40 s
    assert telemetry.registry.get_sample_value("secsched_trimaran_recently_scheduled_pods") == 1
    assert telemetry.registry.get_sample_value("secsched_trimaran_stamped_pods_total", {"stamp": "bind"}) == 2


def _tlp(
    snapshot: WatcherMetrics, clock: Clock, parity: bool = False
) -> tuple[TargetLoadPacking, TrimaranServices]:
    services = TrimaranServices(clock=clock, provider_factory=lambda _: StaticProvider(snapshot))
    handle = Handle()
    handle.register_service(SERVICE, services)
    args = validated_args(TargetLoadPacking, {"watcherAddress": "http://w", "parityMode": parity})
    plugin = TargetLoadPacking(args, handle)
    return plugin, services


def _scores(
    plugin: TargetLoadPacking, table: NodeTable, pending: dict[str, Any]
) -> tuple[list[int], CycleState]:
    state = CycleState()
    scores = plugin.score(state, PodInfo.from_pod(pending), table, table.active_slots().astype(np.intp))
    return scores.tolist(), state


async def test_upstream_sequence_counts_the_first_pod_on_its_node(
    make_node: Callable[..., dict[str, Any]], make_snapshot: MakeSnapshot
) -> None:
    """Spec: pod-1 -> 89/12/74; bound to node-1 after the window, pod-2 -> 100/22/51."""
    nodes = [make_node(name, cpu="2") for name in ("node-1", "node-2", "node-3")]
    snapshot = make_snapshot(
        {
            "node-1": [("CPU", "Latest", 10)],
            "node-2": [("CPU", "Latest", 60)],
            "node-3": [("CPU", "Latest", 0)],
        },
        window_end=END,
    )
    plugin, services = _tlp(snapshot, Clock(END + 10))
    await services.start()
    table = NodeTable.from_objects(nodes)
    assert _scores(plugin, table, pod("pod-1"))[0] == [89, 12, 74]
    services.recently_scheduled.record(pod("pod-1"), "node-1", timestamp=END + 1)
    table.add_pod(PodInfo.from_pod(pod("pod-1", "node-1")), "node-1")
    scores, state = _scores(plugin, table, pod("pod-2", cpu="100m"))
    assert scores == [100, 22, 51]
    note = read_note(state, "TargetLoadPacking")
    assert note is not None and note.recent == {"node-1": 450}
    await services.stop()


async def test_after_a_restart_existing_pods_are_not_counted_twice_unless_in_parity_mode(
    make_node: Callable[..., dict[str, Any]], make_snapshot: MakeSnapshot
) -> None:
    """A pod bound an hour ago is already in the metrics; upstream, restarted now, adds it again."""
    nodes = [make_node("node-1", cpu="2")]
    snapshot = make_snapshot({"node-1": [("CPU", "Latest", 30)]}, window_end=END)
    existing = pod("running", "node-1", cpu="1", scheduled_at="2023-11-14T21:13:20Z")
    results = {}
    for parity in (False, True):
        plugin, services = _tlp(snapshot, Clock(END + 5), parity=parity)
        services.recently_scheduled.replace([existing])
        await services.start()
        table = NodeTable.from_objects(nodes, [existing])
        results[parity] = _scores(plugin, table, pod("new", cpu="100m"))[0]
        await services.stop()
    # ours: 30 % + 150m -> 37.5 % -> 96; upstream: + 1500m more -> 112.5 % -> 0.
    assert results == {False: [96], True: [0]}


@pytest.mark.parametrize("parity", [False, True])
async def test_sums_kept_between_cycles_equal_sums_made_afresh(
    make_node: Callable[..., dict[str, Any]],
    make_snapshot: MakeSnapshot,
    monkeypatch: pytest.MonkeyPatch,
    parity: bool,
) -> None:
    """TargetLoadPacking keeps each node's missing CPU between cycles and updates the nodes whose
    recent pods changed; after every change its scores and notes are those of a plugin that has
    just started (binds, informer sightings, deletions, the 5-minute clean-up, a short change log)."""
    monkeypatch.setattr(recentlyscheduled, "_LOG_LIMIT", 16)
    rng = random.Random(5)
    names = [f"node-{index}" for index in range(8)]
    nodes = [make_node(name, cpu="4") for name in names]
    snapshot = make_snapshot(
        {name: [("CPU", "Latest", 10 * index)] for index, name in enumerate(names)}, window_end=END
    )
    clock = Clock(END + 5)
    kept, services = _tlp(snapshot, clock, parity=parity)
    await services.start()
    table = NodeTable.from_objects(nodes)
    placed: list[dict[str, Any]] = []
    for step in range(300):
        action = rng.random()
        if action < 0.5 or not placed:
            new = pod(f"p{step}", rng.choice(names), cpu=rng.choice(("100m", "1", "2")))
            if rng.random() < 0.5:
                services.recently_scheduled.record(
                    new, new["spec"]["nodeName"], timestamp=clock.now - rng.choice((0, 30, 90))
                )
            else:
                services.recently_scheduled.observe(new)
            placed.append(new)
        elif action < 0.8:
            services.recently_scheduled.forget(placed.pop(rng.randrange(len(placed))))
        else:
            clock.now += rng.choice((10, 100, 400))
        fresh = TargetLoadPacking(kept.args, kept.handle)
        pending = pod("pending", cpu="500m")
        assert _scores(kept, table, pending)[0] == _scores(fresh, table, pending)[0]
        kept_note = read_note(_scores(kept, table, pending)[1], "TargetLoadPacking")
        fresh_note = read_note(_scores(fresh, table, pending)[1], "TargetLoadPacking")
        assert kept_note is not None and fresh_note is not None
        assert kept_note.recent == fresh_note.recent
    await services.stop()
