"""The replay's cluster load: usage samples applied per batch, on the pods' nodes."""

from __future__ import annotations

from secondary_scheduler.replay.cluster import ClusterLoad, NodeShape, StartingCluster
from secondary_scheduler.replay.trace import UsageSample

SHAPE = NodeShape(cpu_millis=8_000, memory_bytes=32 * 2**30)


def test_a_pod_sampled_twice_in_one_batch_uses_its_last_sample() -> None:
    load = ClusterLoad(StartingCluster.generated(2, SHAPE))
    for key in ("a", "b"):
        load.pod_arrived(key, 1.0, 0.0)
    load.place("a", "node-0000")
    load.place("b", "node-0001")
    load.set_use(["a", "b", "a", "nobody"], [3.0, 2.0, 5.0, 9.0], [0.0, 0.0, 0.0, 0.0])
    assert load.use_of("a") == (5.0, 0.0)
    assert load.cpu_used.tolist() == [5.0, 2.0]


def test_a_trace_samples_apply_to_their_pods_and_leave_unknown_pods_alone() -> None:
    load = ClusterLoad(StartingCluster.generated(1, SHAPE))
    load.pod_arrived("one/vm", 1.0, 0.0)
    load.pod_arrived("two/vm", 1.0, 0.0)
    load.place("one/vm", "node-0000")
    load.apply([UsageSample(0.0, "one", "vm", 3.0, 0.0), UsageSample(0.0, "three", "vm", 9.0, 0.0)])
    assert load.use_of("one/vm") == (3.0, 0.0)
    assert load.use_of("two/vm") == (1.0, 0.0)
    assert load.cpu_used.tolist() == [3.0]
