"""NodeResourcesFit (filter and the three scoring strategies) and NodeResourcesBalancedAllocation.

Expected scores are worked out with kube-scheduler's integer arithmetic; the cluster shapes
are those of its unit tests (nodes of 4000m/6000m cpu and 10000 bytes of memory).
"""

from __future__ import annotations

from typing import Any

from tests.unit.framework.kubeobjects import container, make_node, make_pod, pod_info, table_of
from tests.unit.plugins.pluginruns import raw_and_normalized, rejections, scores

from secondary_scheduler.framework import Handle, PodInfo
from secondary_scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from secondary_scheduler.plugins.noderesources.fit import Fit


def fit(**args: Any) -> Fit:
    return Fit(args, Handle())


def two_containers() -> list[dict[str, Any]]:
    """3000m cpu and 5000 bytes of memory in two containers."""
    return [
        container("a", requests={"cpu": "1000m", "memory": "2000"}),
        container("b", requests={"cpu": "2000m", "memory": "3000"}),
    ]


def differently_sized_nodes() -> list[dict[str, Any]]:
    return [make_node("node1", cpu="4000m", memory="10000"), make_node("node2", cpu="6000m", memory="10000")]


def test_insufficient_resources_name_each_missing_resource() -> None:
    table = table_of(
        [make_node("full", cpu="2", memory="2Gi"), make_node("roomy", cpu="8", memory="8Gi")],
        [make_pod("busy", node_name="full", requests={"cpu": "1500m", "memory": "1Gi"})],
    )
    pod = pod_info("p", requests={"cpu": "1", "memory": "1536Mi"})
    assert rejections(fit(), pod, table) == {"full": ["Insufficient cpu", "Insufficient memory"]}


def test_a_request_beyond_the_whole_node_is_unresolvable() -> None:
    table = table_of([make_node("small", cpu="2")])
    assert rejections(fit(), pod_info("p", requests={"cpu": "3"}), table) == {
        "small": ["Insufficient cpu [unresolvable]"]
    }


def test_too_many_pods() -> None:
    table = table_of([make_node("a", pods=2)], [make_pod("x", node_name="a"), make_pod("y", node_name="a")])
    assert rejections(fit(), pod_info("p"), table) == {"a": ["Too many pods"]}


def test_a_pod_without_requests_only_needs_a_pod_slot() -> None:
    table = table_of([make_node("a", cpu="1")], [make_pod("hog", node_name="a", requests={"cpu": "1"})])
    assert rejections(fit(), pod_info("p"), table) == {}


def test_extended_resources_are_checked_unless_ignored() -> None:
    table = table_of([make_node("gpu", allocatable={"example.com/gpu": 1}), make_node("plain")])
    pod = pod_info("p", requests={"example.com/gpu": 2, "hugepages-2Mi": "2Mi"})
    assert rejections(fit(), pod, table) == {
        "gpu": ["Insufficient example.com/gpu [unresolvable]", "Insufficient hugepages-2Mi [unresolvable]"],
        "plain": ["Insufficient example.com/gpu [unresolvable]", "Insufficient hugepages-2Mi [unresolvable]"],
    }
    ignored = {
        "gpu": ["Insufficient hugepages-2Mi [unresolvable]"],
        "plain": ["Insufficient hugepages-2Mi [unresolvable]"],
    }
    assert rejections(fit(ignoredResources=["example.com/gpu"]), pod, table) == ignored
    assert rejections(fit(ignoredResourceGroups=["example.com"]), pod, table) == ignored


def test_least_allocated_prefers_free_capacity() -> None:
    # node1: cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50 -> 37
    # node2: cpu (6000-3000)*100/6000 = 50, memory 50 -> 50
    pod = pod_info("p", containers=two_containers())
    assert scores(fit(), pod, table_of(differently_sized_nodes())) == {"node1": 37, "node2": 50}


def test_least_allocated_counts_unset_requests_as_100m_and_200mi() -> None:
    table = table_of([make_node("a", cpu="1", memory="1000Mi")])
    # cpu (1000-100)*100/1000 = 90; memory (1000Mi-200Mi)*100/1000Mi = 80 -> 85
    assert scores(fit(), pod_info("p"), table) == {"a": 85}


def test_least_allocated_resource_weights() -> None:
    pod = pod_info("p", containers=two_containers())
    strategy = {
        "type": "LeastAllocated",
        "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
    }
    # node1: (25*3 + 50) / 4 = 31; node2: (50*3 + 50) / 4 = 50
    assert scores(fit(scoringStrategy=strategy), pod, table_of(differently_sized_nodes())) == {
        "node1": 31,
        "node2": 50,
    }


def test_most_allocated_prefers_full_nodes() -> None:
    # node1: cpu 3000*100/4000 = 75, memory 50 -> 62; node2: cpu 50, memory 50 -> 50
    pod = pod_info("p", containers=two_containers())
    strategy = {"type": "MostAllocated"}
    assert scores(fit(scoringStrategy=strategy), pod, table_of(differently_sized_nodes())) == {
        "node1": 62,
        "node2": 50,
    }


def test_scored_extended_resources_only_count_when_requested() -> None:
    nodes = [
        make_node("gpu", cpu="4000m", memory="10000", allocatable={"example.com/gpu": 4}),
        make_node("plain"),
    ]
    strategy = {
        "type": "MostAllocated",
        "resources": [{"name": "cpu"}, {"name": "example.com/gpu", "weight": 2}],
    }
    with_gpu = pod_info("p", requests={"cpu": "1", "example.com/gpu": 2})
    # gpu: cpu 25, gpu 2*100/4 = 50 -> (25 + 2*50) / 3 = 41; plain has no gpu: cpu 1000*100/4000 = 25
    assert scores(fit(scoringStrategy=strategy), with_gpu, table_of(nodes)) == {"gpu": 41, "plain": 25}
    without_gpu = pod_info("p", requests={"cpu": "1"})
    assert scores(fit(scoringStrategy=strategy), without_gpu, table_of(nodes)) == {"gpu": 25, "plain": 25}


def ratio(*points: tuple[int, int]) -> dict[str, Any]:
    shape = [{"utilization": utilization, "score": score} for utilization, score in points]
    return {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": shape}}


def test_requested_to_capacity_ratio_follows_the_shape() -> None:
    pod = pod_info("p", containers=two_containers())
    table = table_of(differently_sized_nodes())
    # utilization node1: cpu 75, memory 50; node2: cpu 50, memory 50 (scores scaled by 10)
    assert scores(fit(scoringStrategy=ratio((0, 0), (100, 10))), pod, table) == {"node1": 63, "node2": 50}
    # decreasing: 100 - 75 = 25 and 50 -> round(37.5) = 38
    assert scores(fit(scoringStrategy=ratio((0, 10), (100, 0))), pod, table) == {"node1": 38, "node2": 50}


def test_requested_to_capacity_ratio_truncates_like_go() -> None:
    table = table_of([make_node("a", cpu="100", memory="1Gi")])
    pod = pod_info("p", requests={"cpu": "33", "memory": "1Gi"})
    strategy = ratio((0, 10), (70, 0))
    strategy["resources"] = [{"name": "cpu"}]
    # 100 + (0 - 100) * 33 / 70 = 100 - 47 (Go truncates -47.1 toward zero) = 53
    assert scores(fit(scoringStrategy=strategy), pod, table) == {"a": 53}


def test_requested_to_capacity_ratio_leaves_out_resources_scoring_zero() -> None:
    table = table_of([make_node("a", cpu="4000m", memory="10000")])
    pod = pod_info("p", requests={"cpu": "1", "memory": "10000"})
    # cpu utilization 25 -> 0 (left out of the average), memory 100 -> 100
    assert scores(fit(scoringStrategy=ratio((0, 0), (50, 0), (100, 10))), pod, table) == {"a": 100}


def test_balanced_allocation_prefers_even_usage() -> None:
    # node1: fractions 0.75 and 0.5, deviation 0.125 -> 87; node2: 0.5 and 0.5 -> 100
    pod = pod_info("p", containers=two_containers())
    assert scores(BalancedAllocation(None, Handle()), pod, table_of(differently_sized_nodes())) == {
        "node1": 87,
        "node2": 100,
    }


def test_balanced_allocation_with_three_resources_uses_the_standard_deviation() -> None:
    nodes = [make_node("a", cpu="4000m", memory="10000", allocatable={"ephemeral-storage": "1000"})]
    pod = pod_info("p", requests={"cpu": "1", "memory": "5000", "ephemeral-storage": "1000"})
    args = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}]}
    # fractions 0.25, 0.5, 1: mean 0.5833, population deviation 0.3118 -> 68
    assert scores(BalancedAllocation(args, Handle()), pod, table_of(nodes)) == {"a": 68}


def test_balanced_allocation_skips_best_effort_pods() -> None:
    raw, _ = raw_and_normalized(
        BalancedAllocation(None, Handle()), pod_info("p"), table_of(differently_sized_nodes())
    )
    assert raw == {}


def test_insufficient_resources_are_named_in_upstreams_order() -> None:
    # kube-scheduler checks cpu, memory, ephemeral-storage, then the extended resources,
    # whatever order the pod lists them in (found by tests/conformance).
    table = table_of([make_node("small", cpu="1", memory="1Gi", allocatable={"example.com/gpu": 1})])
    pod = pod_info(
        "p",
        containers=[
            container("a", requests={"example.com/gpu": 2, "ephemeral-storage": "1Pi", "memory": "2Gi"}),
            container("b", requests={"cpu": "2"}),
        ],
    )
    assert rejections(fit(), pod, table) == {
        "small": [
            "Insufficient cpu [unresolvable]",
            "Insufficient memory [unresolvable]",
            "Insufficient ephemeral-storage [unresolvable]",
            "Insufficient example.com/gpu [unresolvable]",
        ]
    }


def test_the_score_counts_the_containers_not_pod_level_resources() -> None:
    # Upstream builds Fit's scorer without the PodLevelResources gate (issue 12 row 6; found
    # again by tests/conformance): pod-level requests fit the node but do not score.
    # BalancedAllocation's scorer has the gate, so it does count them.
    pod = make_pod("p", containers=two_containers())
    pod["spec"]["resources"] = {"requests": {"cpu": "3500m", "memory": "6000"}}
    table = table_of(differently_sized_nodes())
    assert scores(fit(), PodInfo.from_pod(pod), table) == {"node1": 37, "node2": 50}
    # cpu 3500/4000, memory 6000/10000 on node1 -> |0.875-0.6|/2 -> 86; node2: 3500/6000 vs 0.6 -> 99
    assert scores(BalancedAllocation({}, Handle()), PodInfo.from_pod(pod), table) == {
        "node1": 86,
        "node2": 99,
    }


def test_resource_scores_on_nodes_with_every_resource_match_gos_per_node_arithmetic() -> None:
    """The shortcuts for nodes that all have every scored resource (no zero capacity to leave
    out) give what kube-scheduler's per-node integer and float arithmetic gives."""
    import math

    import numpy as np

    from secondary_scheduler.plugins.noderesources.balanced_allocation import _standard_deviation
    from secondary_scheduler.plugins.noderesources.least_allocated import least_allocated

    rng = np.random.default_rng(27)
    allocatable = rng.integers(1, 64_000, size=(300, 2))
    requested = rng.integers(0, 80_000, size=(300, 2))
    weights = np.array([3, 1])
    scores = least_allocated(requested, allocatable, weights)
    for node in range(300):
        go = (
            sum(
                w * (0 if r > a else (a - r) * 100 // a)
                for r, a, w in zip(requested[node].tolist(), allocatable[node].tolist(), (3, 1), strict=True)
            )
            // 4
        )
        assert scores[node] == go, node
    fractions = np.minimum(requested / allocatable, 1.0)
    deviation = _standard_deviation(fractions, np.ones_like(fractions, dtype=bool))
    for node in range(300):
        first, second = fractions[node].tolist()
        assert deviation[node] == math.fabs((first - second) / 2)
