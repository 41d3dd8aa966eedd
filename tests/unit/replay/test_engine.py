"""The replay engine on tiny hand-made traces: the real framework and plugins, on the simulated clock."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from secondary_scheduler.cli.score_inputs import ClusterSnapshot, RecentPod
from secondary_scheduler.cli.score_run import explain
from secondary_scheduler.config import load_config
from secondary_scheduler.config.model import SchedulerConfiguration
from secondary_scheduler.plugins.registry import Registry, catalog_of, load_registry
from secondary_scheduler.replay.cluster import NodeShape, StartingCluster
from secondary_scheduler.replay.engine import ProfileReplay, ReplayOptions
from secondary_scheduler.replay.report import ProfileResult
from secondary_scheduler.replay.trace import PodArrival, TraceRecord, UsageSample

REGISTRY: Registry = load_registry()
EXAMPLES = Path(__file__).parents[3] / "examples" / "replay"
SMALL = NodeShape(cpu_millis=32_000, memory_bytes=128 * 2**30)


def config(name: str) -> SchedulerConfiguration:
    path = EXAMPLES / name
    return load_config(path.read_text(), str(path), catalog=catalog_of(REGISTRY)).config


def pod(t: float, name: str, cpu: str, end: float | None = None, memory: str = "1Gi") -> PodArrival:
    return PodArrival(t=t, namespace="default", name=name, end=end, requests={"cpu": cpu, "memory": memory})


def use(t: float, name: str, cpu: float, memory: float = 2**30) -> UsageSample:
    return UsageSample(t=t, namespace="default", name=name, cpu=cpu, memory=memory)


def replayed(
    records: Sequence[TraceRecord], nodes: int, config_name: str = "default.yaml", shape: NodeShape = SMALL
) -> tuple[ProfileReplay, ProfileResult]:
    loaded = config(config_name)
    engine = ProfileReplay(
        loaded.profiles[0], loaded, REGISTRY, StartingCluster.generated(nodes, shape), ReplayOptions()
    )
    return engine, asyncio.run(engine.run(records))


def test_a_pod_is_bound_on_arrival_and_its_load_leaves_with_it() -> None:
    engine, result = replayed([pod(0, "a", "2", end=120), use(60, "a", 5.0), pod(180, "b", "1")], nodes=2)
    assert set(engine.placements) == {"default/a", "default/b"}
    assert result.decisions == 2
    assert result.unschedulable_pods == 0 and result.waited_pods == 0
    # a is gone at t=120: only b's requests (1 core, no sample yet) remain on the cluster.
    assert engine.load.cpu_used.sum() == 1.0
    assert engine.load.pod_count.sum() == 1


def test_a_pod_that_fits_nowhere_is_retried_when_room_frees() -> None:
    shape = NodeShape(cpu_millis=4_000, memory_bytes=8 * 2**30)
    engine, result = replayed(
        [pod(0, "a", "3", end=100), pod(10, "b", "3"), use(200, "b", 1.0)], 1, shape=shape
    )
    assert engine.placements == {"default/a": "node-0000", "default/b": "node-0000"}
    assert result.waited_pods == 1
    assert result.max_wait_seconds == 90.0  # bound at a's deletion (t=100), not at a later retry
    assert result.unschedulable_pods == 0
    assert result.decisions == 3  # a; b, which failed; b again, moved back by the deletion


def test_a_pod_that_never_fits_is_unschedulable() -> None:
    shape = NodeShape(cpu_millis=4_000, memory_bytes=8 * 2**30)
    _, result = replayed([pod(0, "big", "8"), use(3600, "big", 1.0)], nodes=2, shape=shape)
    assert result.unschedulable_pods == 1
    # Retried as the queue retries an unschedulable pod with no event to help it: every 5 minutes.
    assert 12 <= result.decisions <= 14


def test_targetloadpacking_sees_use_over_requests_after_the_next_scrape_not_before() -> None:
    records = [
        pod(0, "a", "1"),
        use(1, "a", 30.0),  # a busy VM: 30 of the node's 32 cores, far above its request
        pod(5, "b", "1"),  # before the next scrape (t=30): TLP still sees an idle node, and packs
        pod(100, "c", "1"),  # after three scrapes: a's node is over the target
    ]
    engine, _ = replayed(records, nodes=2, config_name="targetloadpacking.yaml")
    first = engine.placements["default/a"]
    assert engine.placements["default/b"] == first
    assert engine.placements["default/c"] != first


def test_recently_scheduled_pods_are_stamped_on_the_simulated_clock() -> None:
    engine, _ = replayed([pod(0, "a", "1"), pod(42, "b", "1")], nodes=2, config_name="targetloadpacking.yaml")
    cache = engine.metrics.services.recently_scheduled
    node = engine.placements["default/b"]
    stamps = {entry.pod["metadata"]["name"]: entry.bound_at for entry in cache.on_node(node)}
    assert stamps["b"] == engine.clock.epoch + 42


def test_the_replay_decides_as_score_does_on_the_same_state() -> None:
    """Same code path: the state the replay schedules the last pod in, given to `secsched score`."""
    records: list[TraceRecord] = [
        pod(0, "a", "2"),
        use(0, "a", 12.0),
        pod(0, "b", "2"),
        use(0, "b", 4.0),
        pod(0, "c", "2"),
        use(0, "c", 20.0),
        pod(400, "d", "2"),
        pod(400, "e", "2"),
    ]
    before, _ = replayed(records[:-1], nodes=4, config_name="targetloadpacking.yaml")
    after, _ = replayed(records, nodes=4, config_name="targetloadpacking.yaml")
    view = before.metrics.services.collectors.collectors()[0]
    served, _stale = view.latest()
    assert served is not None
    # The collector took the source's values as arrays; `score` reads the document of the same
    # fetch, as the simulated source serves it whole.
    document = asyncio.run(before.metrics.providers[0].fetch(served.window))
    assert document.timestamp == served.metrics.timestamp
    recent = [
        RecentPod(entry.pod, node, entry.bound_at or 0.0)
        for node, entries in before.metrics.services.recently_scheduled.on_nodes()
        for entry in entries
    ]
    snapshot = ClusterSnapshot(
        nodes=[obj for obj in before.table.objects if obj is not None],
        pods=[info.obj for info, _slot in before.table.all_pods()],
        metrics=document,
        recently_scheduled=recent,
        now=before.clock.wall(),
    )
    loaded = config("targetloadpacking.yaml")
    last = records[-1]
    assert isinstance(last, PodArrival)
    report = explain(loaded.profiles[0], snapshot, last.manifest("secondary-scheduler"), registry=REGISTRY)
    assert len(report.tied) <= 1, "the check needs one best node"
    assert report.selected == after.placements["default/e"]
