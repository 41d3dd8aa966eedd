"""LoadVariationRiskBalancing against upstream's unit test vectors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.scoring import (
    build_node_arrays,
    resource_scores,
    score_nodes,
)
from secondary_scheduler.plugins.trimaran.resourcestats import ResourceStats, go_round, pod_requests
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

MakeNode = Callable[..., dict[str, Any]]
MakePod = Callable[..., dict[str, Any]]
MakeSnapshot = Callable[..., WatcherMetrics]

MI = 2**20


def _single_stats(capacity: float, req: float, avg: float, std: float) -> ResourceStats:
    def array(value: float) -> np.ndarray:
        return np.array([value], dtype=np.float64)

    return ResourceStats(used_avg=array(avg), used_stdev=array(std), req=array(req), capacity=array(capacity))


@pytest.mark.parametrize(
    ("capacity", "avg", "std", "margin", "sensitivity", "expected"),
    [
        (100, 40, 36, 1, 1, 57),
        (0, 40, 36, 1, 1, 0),
        (100, -40, 36, 1, 2, 65),
        (100, 200, 36, 1, 2, 20),
        (100, 40, -36, 1, 2, 75),
        (100, 40, 120, 1, 2, 25),
        (100, 40, 36, -1, 1, 75),
        (100, 40, 36, 1, -1, 57),
        (100, 40, 36, 1, 0, 75),  # 1/0 is +Inf in Go: 0.36 ** +Inf == 0
    ],
)
def test_compute_score_table(
    capacity: float, avg: float, std: float, margin: float, sensitivity: float, expected: int
) -> None:
    raw = resource_scores(_single_stats(capacity, 10, avg, std), margin, sensitivity)
    assert go_round(raw[0]) == expected


def test_sensitivity_zero_keeps_a_full_deviation() -> None:
    """With sensitivity 0 the deviation counts only when it is the whole capacity: 1 ** +Inf == 1."""
    raw = resource_scores(_single_stats(100, 0, 40, 100), 1, 0)
    assert raw[0] == (1 - (0.4 + 1.0) / 2) * 100


def test_float_order_keeps_57_point_49999() -> None:
    """Risk 0.425 gives (1 - 0.425) * 100 == 57.49999999999999, so 57 and not 58."""
    raw = resource_scores(_single_stats(100, 10, 40, 35), 1, 1)
    assert raw[0] == 57.49999999999999
    assert go_round(raw[0]) == 57


@pytest.mark.parametrize(
    ("pod_resources", "rows", "expected"),
    [
        (None, [("CPU", "AVG", 50)], 75),
        (None, [("CPU", "AVG", 100)], 50),
        ((200, 256 * MI), [("CPU", "AVG", 30), ("CPU", "STD", 16)], 67),
        (
            (100, 512 * MI),
            [("CPU", "AVG", 40), ("CPU", "STD", 16), ("Memory", "AVG", 50), ("Memory", "STD", 10)],
            45,
        ),
        (
            (100, 512 * MI),
            [("CPU", "AVG", 80), ("CPU", "STD", 20), ("Memory", "AVG", 25), ("Memory", "STD", 15)],
            45,
        ),
        (None, None, 0),
    ],
)
def test_upstream_score_cases(
    make_node: MakeNode,
    make_pod: MakePod,
    make_snapshot: MakeSnapshot,
    pod_resources: tuple[int, int] | None,
    rows: list[tuple[str, str, float]] | None,
    expected: int,
) -> None:
    containers = []
    if pod_resources is not None:
        cpu, memory = pod_resources
        resources = {"cpu": f"{cpu}m", "memory": str(memory)}
        containers = [{"requests": resources, "limits": resources}]
    pod = make_pod(containers=containers)
    snapshot = None if rows is None else make_snapshot({"node-1": rows})
    arrays = build_node_arrays([make_node("node-1")], snapshot)
    args = LoadVariationRiskBalancingArgs.model_validate({})
    assert score_nodes(arrays, pod_requests(pod), args).tolist() == [expected]


def test_scores_follow_node_order_and_missing_nodes_score_zero(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    snapshot = make_snapshot({"b": [("CPU", "AVG", 100)], "a": [("CPU", "AVG", 50)]})
    arrays = build_node_arrays([make_node("a"), make_node("x"), make_node("b")], snapshot)
    args = LoadVariationRiskBalancingArgs.model_validate({})
    assert score_nodes(arrays, pod_requests(make_pod()), args).tolist() == [75, 0, 50]
