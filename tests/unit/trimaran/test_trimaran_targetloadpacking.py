"""TargetLoadPacking against upstream's unit and integration test vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs
from secondary_scheduler.plugins.trimaran.targetloadpacking.scoring import (
    NodeArrays,
    build_node_arrays,
    counts_as_missing,
    missing_utilisation,
    node_cpu_percent,
    predict_pod_cpu,
    predicted_percent,
    score_nodes,
    score_predicted,
)
from secondary_scheduler.plugins.trimaran.watchermetrics import Metric, WatcherMetrics

MakeNode = Callable[..., dict[str, Any]]
MakePod = Callable[..., dict[str, Any]]
MakeSnapshot = Callable[..., WatcherMetrics]

DEFAULT_ARGS = TargetLoadPackingArgs.model_validate({})


def _score(
    args: TargetLoadPackingArgs,
    pod: dict[str, Any],
    nodes: Sequence[dict[str, Any]],
    snapshot: WatcherMetrics | None,
    missing: dict[str, int] | None = None,
) -> list[int]:
    arrays = build_node_arrays(nodes, snapshot, missing or {})
    return score_nodes(arrays, predict_pod_cpu(pod, args), args).tolist()


@pytest.mark.parametrize(
    ("containers", "rows", "expected"),
    [
        ([], [("CPU", "Latest", 0)], 40),  # new node
        ([], [("CPU", "Latest", 50)], 33),  # hot node
        ([{"requests": {"cpu": "1000m"}, "limits": {"cpu": "1000m"}}], [("CPU", "Latest", 30)], 0),  # > 100 %
        ([], None, 0),  # no metrics (404 from the watcher)
    ],
)
def test_upstream_score_cases(
    make_node: MakeNode,
    make_pod: MakePod,
    make_snapshot: MakeSnapshot,
    containers: list[dict[str, Any]],
    rows: list[tuple[str, str, float]] | None,
    expected: int,
) -> None:
    snapshot = None if rows is None else make_snapshot({"node-1": rows})
    assert _score(DEFAULT_ARGS, make_pod(containers=containers), [make_node("node-1")], snapshot) == [
        expected
    ]


def test_node_without_a_cpu_average_or_latest_scores_zero(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    snapshot = make_snapshot({"node-1": [("CPU", "STD", 5), ("Memory", "AVG", 10)]})
    assert _score(DEFAULT_ARGS, make_pod(), [make_node("node-1")], snapshot) == [0]


def test_integration_sequence_counts_the_first_pod_as_missing(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    nodes = [make_node(name, cpu="2") for name in ("node-1", "node-2", "node-3")]
    snapshot = make_snapshot(
        {
            "node-1": [("CPU", "Latest", 10)],
            "node-2": [("CPU", "Latest", 60)],
            "node-3": [("CPU", "Latest", 0)],
        }
    )
    pod_1 = make_pod(containers=[{"requests": {"cpu": "300m"}}])
    pod_2 = make_pod(containers=[{"requests": {"cpu": "100m"}}])
    assert predict_pod_cpu(pod_1, DEFAULT_ARGS) == 450
    assert predict_pod_cpu(pod_2, DEFAULT_ARGS) == 150
    assert _score(DEFAULT_ARGS, pod_1, nodes, snapshot) == [89, 12, 74]

    placed_at = snapshot.window.end + 1  # seen after the metrics window closed
    missing = {"node-1": missing_utilisation([(placed_at, pod_1)], snapshot.window.end, DEFAULT_ARGS)}
    assert missing == {"node-1": 450}
    assert _score(DEFAULT_ARGS, pod_2, nodes, snapshot, missing) == [100, 22, 51]


def test_target_fifty_scores_around_the_target(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    args = TargetLoadPackingArgs.model_validate({"targetUtilization": 50})
    names = ("node-1", "node-2", "node-3")
    snapshot = make_snapshot(
        {name: [("CPU", "Latest", pct)] for name, pct in zip(names, (25, 50, 75), strict=True)}
    )
    assert _score(args, make_pod(), [make_node(n) for n in names], snapshot) == [75, 100, 25]


def test_half_rounds_away_from_zero(
    make_node: MakeNode, make_pod: MakePod, make_snapshot: MakeSnapshot
) -> None:
    """Predicted 23 % at target 40 is 74.5 points, which Go rounds to 75 (Python's round() gives 74)."""
    pod = make_pod(containers=[{"limits": {"cpu": "920m"}}])
    snapshot = make_snapshot({"node-1": [("CPU", "Latest", 0)]})
    nodes = [make_node("node-1", cpu="4000m")]
    assert predicted_percent(build_node_arrays(nodes, snapshot, {}), 920).tolist() == [23.0]
    assert _score(DEFAULT_ARGS, pod, nodes, snapshot) == [75]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"limits": {"cpu": "700m"}, "requests": {"cpu": "100m"}}, 700),
        ({"requests": {"cpu": "333m"}}, 500),  # 499.5 rounds half away from zero
        ({"requests": {"memory": "1Gi"}}, 1000),
        ({}, 1000),
    ],
)
def test_container_prediction(make_pod: MakePod, resources: dict[str, Any], expected: int) -> None:
    assert predict_pod_cpu(make_pod(containers=[resources]), DEFAULT_ARGS) == expected


def test_pod_prediction_adds_overhead_and_ignores_init_containers(make_pod: MakePod) -> None:
    pod = make_pod(
        containers=[{"requests": {"cpu": "100m"}}, {}],
        init_containers=[{"requests": {"cpu": "4"}}],
        overhead={"cpu": "10m"},
    )
    assert predict_pod_cpu(pod, DEFAULT_ARGS) == 150 + 1000 + 10


@pytest.mark.parametrize(
    ("seen_at", "window_end", "expected"),
    [
        (1001, 1000, True),  # after the window
        (1000, 1000, True),
        (941, 1000, True),  # 59 s before the end: not reported yet
        (940, 1000, False),  # 60 s before the end: in the metrics
        (940.9, 1000, False),  # fractions dropped, as Go's Unix()
        (0, 1000, False),
    ],
)
def test_counts_as_missing(seen_at: float, window_end: int, expected: bool) -> None:
    assert counts_as_missing(seen_at, window_end) is expected


def test_node_cpu_percent_takes_the_last_average_or_latest() -> None:
    metrics = [
        Metric(type="CPU", operator="AVG", value=10),
        Metric(type="CPU", operator="Latest", value=20),
        Metric(type="CPU", operator="STD", value=30),
        Metric(type="Memory", operator="AVG", value=40),
    ]
    assert node_cpu_percent(metrics) == 20
    assert node_cpu_percent(metrics[2:]) is None


def test_capacity_not_allocatable_is_the_denominator(make_snapshot: MakeSnapshot) -> None:
    node = {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}, "allocatable": {"cpu": "1"}}}
    arrays = build_node_arrays([node], make_snapshot({"n": [("CPU", "AVG", 0)]}), {"n": 7, "other": 9})
    assert arrays.capacity_millis.tolist() == [2000]
    assert arrays.missing_millis.tolist() == [7]


def test_zero_capacity_predicts_zero_percent() -> None:
    arrays = NodeArrays(
        capacity_millis=np.array([0], dtype=np.int64),
        cpu_percent=np.array([50.0]),
        missing_millis=np.array([0], dtype=np.int64),
    )
    assert score_nodes(arrays, 500, DEFAULT_ARGS).tolist() == [40]


def test_score_predicted_piecewise() -> None:
    predicted = np.array([0.0, 20.0, 40.0, 70.0, 100.0, 100.5])
    assert score_predicted(predicted, 40).tolist() == [40, 70, 100, 20, 0, 0]
