"""The hindsight bound of replay (bench/hindsight.py): the future use it reads from a trace, and
that a replay runs with it as the only Score plugin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from bench.hindsight import FutureUse
from tests.unit.bench.replaybound import replay_alone

from secondary_scheduler.replay.trace import PodArrival, TraceHeader, UsageSample, write_trace

REQUESTS = {"cpu": "100m", "memory": "1Gi"}


def test_a_sample_holds_until_the_next_and_nothing_is_used_outside_a_pods_life(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    records = [
        PodArrival(0.0, "ns", "a", 900.0, REQUESTS, instance_type="u1.medium"),
        UsageSample(0.0, "ns", "a", 1.0, 0.0),
        UsageSample(300.0, "ns", "a", 2.0, 0.0),
        PodArrival(450.0, "ns", "b", None, REQUESTS, instance_type="u1.medium"),
        UsageSample(450.0, "ns", "b", 3.0, 0.0),
        UsageSample(1200.0, "ns", "b", 4.0, 0.0),
    ]
    write_trace(trace, TraceHeader(), records)
    future = FutureUse(trace, "secsched", 300.0)
    a, b = future.of("ns/a"), future.of("ns/b")
    assert a is not None and b is not None and future.of("ns/c") is None
    # grid 0, 300, 600, 900, 1200, 1500: a's 2.0 holds at 600 and ends at 900; b from its step on
    assert a.tolist() == [1.0, 2.0, 2.0, 0.0, 0.0, 0.0]
    assert b.tolist() == [0.0, 3.0, 3.0, 3.0, 4.0, 4.0]
    # the class's mean over its pods alive at each step
    expected = future.expected("ns/b")
    assert expected is not None
    assert np.allclose(expected, [1.0, 2.5, 2.5, 3.0, 4.0, 4.0])


def test_a_replay_places_every_pod_with_hindsight_alone(tmp_path: Path) -> None:
    profile = replay_alone(tmp_path, "bench.hindsight:HindsightBalance", "hindsight.yaml", days=0.5)
    assert profile["decisions"] == 30 and profile["unschedulablePods"] == 0
