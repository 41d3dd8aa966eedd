"""LowRiskOverCommitment against upstream's unit and integration tests and the design example."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.scoring import (
    NodeArrays,
    PodResources,
    ResourceArrays,
    build_node_arrays,
    compute_risk,
    prescore,
    score_nodes,
)
from secondary_scheduler.plugins.trimaran.resourcestats import Resources
from secondary_scheduler.plugins.trimaran.watchermetrics import ResourceDataArrays, WatcherMetrics

MakeNode = Callable[..., dict[str, Any]]
MakePod = Callable[..., dict[str, Any]]
MakeSnapshot = Callable[..., WatcherMetrics]


def _ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _usage(avg: float, std: float, valid: bool = True) -> ResourceDataArrays:
    return ResourceDataArrays(avg=np.array([avg]), stdev=np.array([std]), valid=np.array([valid]))


@pytest.mark.parametrize(
    (
        "resource",
        "capacity",
        "avg",
        "node_request",
        "node_limit",
        "request_minus_pod",
        "limit_minus_pod",
        "expected",
    ),
    [
        ("cpu", 4000, 80, 2000, 3000, 1000, 2000, 0.5),
        ("memory", 4096, 25, 2048, 6144, 0, 0, 0.25),
        ("cpu", 4000, 80, 4000, 5000, 3000, 4000, 1.0),
        ("memory", 4096, 25, 1024, 7168, 512, 6144, 0.75),
    ],
)
def test_compute_risk_rows(
    resource: str,
    capacity: int,
    avg: float,
    node_request: int,
    node_limit: int,
    request_minus_pod: int,
    limit_minus_pod: int,
    expected: float,
) -> None:
    """Upstream's node-A: 4000m / 4Ki, CPU AVG 80 STD 0, memory AVG 25 STD 0, window 5, weights 0.5."""
    risk = compute_risk(
        resource,
        capacity=_ints(capacity),
        request=_ints(node_request),
        limit=_ints(node_limit),
        request_minus_pod=_ints(request_minus_pod),
        limit_minus_pod=_ints(limit_minus_pod),
        usage=_usage(avg, 0),
        smoothing_window_size=5,
        weight=0.5,
    )
    assert risk.tolist() == [expected]


def test_best_effort_pod_scores_zero_everywhere(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    pod = make_pod()
    resources = prescore(pod)
    assert resources.best_effort
    arrays = build_node_arrays([make_node("node-1")], {}, make_snapshot({"node-1": [("CPU", "AVG", 20)]}))
    assert score_nodes(arrays, resources, LowRiskOverCommitmentArgs.model_validate({})).tolist() == [0]


def _pod(make_pod: MakePod, cpu_request: str, cpu_limit: str) -> dict[str, Any]:
    return make_pod(
        containers=[
            {"requests": {"cpu": cpu_request, "memory": "64"}, "limits": {"cpu": cpu_limit, "memory": "64"}}
        ]
    )


def test_integration_two_nodes(make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot) -> None:
    nodes = [make_node("node-1", cpu="2", memory="256"), make_node("node-2", cpu="2", memory="256")]
    snapshot = make_snapshot(
        {
            "node-1": [("CPU", "AVG", 60), ("CPU", "STD", 30)],
            "node-2": [("CPU", "AVG", 30), ("CPU", "STD", 20)],
        },
        window_end=1556985422,
    )
    pods_by_node = {"node-1": [_pod(make_pod, "500m", "500m")], "node-2": [_pod(make_pod, "100m", "1200m")]}
    args = LowRiskOverCommitmentArgs.model_validate({"riskLimitWeights": {"cpu": 1, "memory": 1}})
    arrays = build_node_arrays(nodes, pods_by_node, snapshot)
    assert score_nodes(arrays, prescore(_pod(make_pod, "500m", "1000m")), args).tolist() == [100, 88]


@pytest.mark.parametrize(
    ("requests", "limits", "used_avg", "used_std", "expected"),
    [
        (2617, 5816, 2452.89, 467.45, 44),  # node-21
        (2544, 4620, 1901.78, 606.49, 63),  # node-24
        (3568, 4380, 1326.75, 421.59, 70),  # node-28
    ],
)
def test_design_example(requests: int, limits: int, used_avg: float, used_std: float, expected: int) -> None:
    """CPU only, 3910m nodes; totals include the pending pod (request = limit = 100m)."""
    capacity = 3910
    cpu = ResourceArrays(
        capacity=_ints(capacity),
        requests=_ints(requests - 100),
        limits=_ints(limits - 100),
        usage=_usage(used_avg / capacity * 100, used_std / capacity * 100),
    )
    memory = ResourceArrays(
        capacity=_ints(2**30), requests=_ints(0), limits=_ints(0), usage=_usage(0, 0, valid=False)
    )
    arrays = NodeArrays(has_metrics=np.array([True]), cpu=cpu, memory=memory)
    pod = PodResources(requests=Resources(100, 0), limits=Resources(100, 0))
    assert score_nodes(arrays, pod, LowRiskOverCommitmentArgs.model_validate({})).tolist() == [expected]


def test_node_without_metrics_scores_zero(make_node: MakeNode, make_pod: MakePod) -> None:
    arrays = build_node_arrays([make_node("node-1")], {}, None)
    args = LowRiskOverCommitmentArgs.model_validate({})
    assert score_nodes(arrays, prescore(_pod(make_pod, "100m", "200m")), args).tolist() == [0]


def test_node_totals_raise_limits_to_requests_and_skip_absent_nodes(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    burstable = make_pod(containers=[{"requests": {"cpu": "300m", "memory": "1Mi"}}])
    arrays = build_node_arrays(
        [make_node("a"), make_node("b")], {"a": [burstable, _pod(make_pod, "100m", "400m")]}, None
    )
    assert arrays.cpu.requests.tolist() == [400, 0]
    assert arrays.cpu.limits.tolist() == [700, 0]
    assert arrays.memory.limits.tolist() == [2**20 + 64, 0]
    assert arrays.has_metrics.tolist() == [False, False]


def test_requests_are_capped_at_capacity_limits_are_not() -> None:
    """Risk from limits alone (weight 1): (limit - cap) / (limit - capped request)."""
    risk = compute_risk(
        "cpu",
        capacity=_ints(1000),
        request=_ints(1000),
        limit=_ints(3000),
        request_minus_pod=_ints(1000),
        limit_minus_pod=_ints(2000),
        usage=_usage(0, 0, valid=False),
        smoothing_window_size=5,
        weight=1.0,
    )
    assert risk.tolist() == [1.0]
    half = compute_risk(
        "cpu",
        capacity=_ints(1000),
        request=_ints(500),
        limit=_ints(1500),
        request_minus_pod=_ints(0),
        limit_minus_pod=_ints(0),
        usage=_usage(0, 0, valid=False),
        smoothing_window_size=5,
        weight=1.0,
    )
    assert half.tolist() == [0.5]


def test_metrics_without_cpu_or_memory_leave_only_the_limit_risk(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    """Limits 1600m on 1000m with 600m requested: limit risk 0.6, weighted 0.5, so 70."""
    existing = make_pod(containers=[{"requests": {"cpu": "500m"}, "limits": {"cpu": "1500m"}}])
    pending = make_pod(containers=[{"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}}])
    snapshot = make_snapshot({"node-1": [("Bandwidth", "AVG", 10)]})
    arrays = build_node_arrays([make_node("node-1")], {"node-1": [existing]}, snapshot)
    args = LowRiskOverCommitmentArgs.model_validate({})
    assert score_nodes(arrays, prescore(pending), args).tolist() == [70]
