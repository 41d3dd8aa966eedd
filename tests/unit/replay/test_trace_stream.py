"""A trace's ``stream()`` (usage samples batched per instant) is its ``records()``, and replays the same."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from secondary_scheduler.config import load_config
from secondary_scheduler.plugins.registry import catalog_of, load_registry
from secondary_scheduler.replay.cluster import ClusterLoad, NodeShape, StartingCluster
from secondary_scheduler.replay.engine import ProfileReplay, ReplayOptions
from secondary_scheduler.replay.generate import FleetOptions, FleetTrace
from secondary_scheduler.replay.trace import (
    PodArrival,
    ReplayRecord,
    UsageBatch,
    UsageSample,
    batched,
    open_trace,
    write_trace,
)

EXAMPLES = Path(__file__).parents[3] / "examples" / "replay"
SHAPE = NodeShape(cpu_millis=8_000, memory_bytes=32 * 2**30)


def flattened(stream: list[ReplayRecord]) -> list[PodArrival | UsageSample]:
    records: list[PodArrival | UsageSample] = []
    for record in stream:
        if isinstance(record, UsageBatch):
            records.extend(record.samples())
        else:
            records.append(record)
    return records


def test_the_generator_stream_is_its_records_batched_per_instant() -> None:
    fleet = FleetTrace(FleetOptions(vms=60, days=1, seed=4))
    stream = list(fleet.stream())
    assert flattened(stream) == list(fleet.records())
    batches = [record for record in stream if isinstance(record, UsageBatch)]
    assert any(len(batch.keys) > 1 for batch in batches)
    assert all(type(record) is not UsageSample for record in stream)


def test_a_trace_file_streams_what_it_reads_with_an_instants_samples_in_one_batch(tmp_path: Path) -> None:
    fleet = FleetTrace(FleetOptions(vms=30, days=0.5, seed=2))
    path = tmp_path / "trace.jsonl"
    write_trace(path, fleet.header, fleet.records())
    trace = open_trace(path)
    stream = list(trace.stream())
    assert flattened(stream) == list(trace.records())
    times = [record.t for record in stream if isinstance(record, UsageBatch)]
    assert len(times) < sum(1 for record in trace.records() if isinstance(record, UsageSample))


def test_batched_keeps_order_and_splits_at_arrivals_and_new_instants() -> None:
    arrival = PodArrival(t=0.0, namespace="ns", name="c", end=None, requests={"cpu": "1"})
    records = [
        UsageSample(0.0, "ns", "a", 1.0, 10.0),
        UsageSample(0.0, "ns", "b", 2.0, 20.0),
        arrival,
        UsageSample(0.0, "ns", "c", 3.0, 30.0),
        UsageSample(5.0, "ns", "a", 4.0, 40.0),
    ]
    stream = list(batched(records))
    assert [type(record) for record in stream] == [UsageBatch, PodArrival, UsageBatch, UsageBatch]
    first = stream[0]
    assert isinstance(first, UsageBatch)
    assert first.keys == ["ns/a", "ns/b"] and first.cpu.tolist() == [1.0, 2.0]
    assert flattened(stream) == records


def test_a_batch_applies_as_its_samples_do_the_last_sample_of_a_pod_holding() -> None:
    by_batch, by_sample = (ClusterLoad(StartingCluster.generated(2, SHAPE)) for _ in range(2))
    for load in (by_batch, by_sample):
        for key, node in (("ns/a", "node-0000"), ("ns/b", "node-0001")):
            load.pod_arrived(key, 1.0, 0.0)
            load.place(key, node)
    batch = UsageBatch(0.0, ["ns/a", "ns/b", "ns/a", "ns/gone"], np.array([3.0, 2.0, 5.0, 9.0]), np.zeros(4))
    single = UsageSample(0.0, "ns", "b", 7.0, 1.0)
    by_batch.apply([batch, single])
    by_sample.apply([*batch.samples(), single])
    assert by_batch.cpu_used.tolist() == by_sample.cpu_used.tolist() == [5.0, 7.0]
    assert by_batch.use_of("ns/a") == by_sample.use_of("ns/a") == (5.0, 0.0)


def test_replaying_the_stream_decides_and_measures_as_replaying_the_records() -> None:
    registry = load_registry()
    path = EXAMPLES / "targetloadpacking.yaml"
    config = load_config(path.read_text(), str(path), catalog=catalog_of(registry)).config
    cluster = StartingCluster.generated(6, SHAPE)
    fleet = FleetTrace(FleetOptions(vms=80, days=0.5, seed=7))
    outcomes = []
    for records in (fleet.records(), fleet.stream()):
        engine = ProfileReplay(config.profiles[0], config, registry, cluster, ReplayOptions(seed=1))
        result = asyncio.run(engine.run(records))
        outcomes.append((engine.placements, result.node_minutes_over_target, result.p99_node_cpu))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0], "some pods were placed"
