"""Parsing load-watcher's WatcherMetrics JSON and Trimaran's GetResourceData rules."""

from __future__ import annotations

import pytest

from secondary_scheduler.plugins.trimaran.watchermetrics import (
    CPU,
    MEMORY,
    Metric,
    ResourceData,
    WatcherMetrics,
    node_metrics_list,
    resource_data,
    resource_data_arrays,
)

DOCUMENT = {
    "timestamp": 1556987522,
    "window": {"duration": "15m", "start": 1556984522, "end": 1556985422},
    "source": "Prometheus",
    "data": {
        "NodeMetricsMap": {
            "node-1": {
                "metrics": [
                    {"name": "cpu", "type": "CPU", "operator": "AVG", "rollup": "15m", "value": 20.5},
                    {"name": "cpu", "type": "CPU", "operator": "STD", "rollup": "15m", "value": 5},
                ],
                "tags": {},
                "metadata": {"dataCenter": "dc-1", "pool": "ignored"},
            },
            "node-empty": {"metrics": [], "tags": {}, "metadata": {"dataCenter": ""}},
            "node-null": {"metrics": None, "tags": None, "metadata": None},
        }
    },
}


def test_parses_the_load_watcher_document() -> None:
    snapshot = WatcherMetrics.parse(DOCUMENT)
    assert snapshot.timestamp == 1556987522
    assert (snapshot.window.duration, snapshot.window.start, snapshot.window.end) == (
        "15m",
        1556984522,
        1556985422,
    )
    assert snapshot.source == "Prometheus"
    node = snapshot.data.node_metrics_map["node-1"]
    assert node.metadata.data_center == "dc-1"
    assert node.metrics[0] == Metric(name="cpu", type="CPU", operator="AVG", rollup="15m", value=20.5)


def test_missing_parts_take_zero_values() -> None:
    snapshot = WatcherMetrics.parse({"data": {"NodeMetricsMap": {"n": {"metrics": [{"type": "CPU"}]}}}})
    assert snapshot.window.end == 0
    assert snapshot.node_metrics("n") == [Metric(type="CPU")]
    assert WatcherMetrics.parse({}).data.node_metrics_map == {}
    assert WatcherMetrics.parse({"data": {"NodeMetricsMap": None}}).node_metrics("n") is None


@pytest.mark.parametrize("name", ["node-absent", "node-empty", "node-null"])
def test_absent_or_empty_nodes_have_no_metrics(name: str) -> None:
    assert WatcherMetrics.parse(DOCUMENT).node_metrics(name) is None


def test_no_snapshot_means_no_metrics_anywhere() -> None:
    assert node_metrics_list(None, ["a", "b"]) == [None, None]
    assert resource_data_arrays(None, ["a"], CPU).valid.tolist() == [False]


def _metrics(*rows: tuple[str, str, float]) -> list[Metric]:
    return [Metric(type=t, operator=op, value=v) for t, op, v in rows]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([(CPU, "AVG", 40), (CPU, "STD", 36)], ResourceData(40, 36, True)),
        ([(CPU, "", 10), (CPU, "AVG", 40)], ResourceData(40, 0, True)),
        ([(CPU, "AVG", 40), (CPU, "Latest", 10), (CPU, "", 11)], ResourceData(40, 0, True)),
        ([(CPU, "Latest", 10), (CPU, "Latest", 12)], ResourceData(12, 0, True)),
        ([(CPU, "STD", 7)], ResourceData(0, 7, True)),
        ([(CPU, "SUM", 7)], ResourceData(0, 0, True)),
        ([("cpu", "AVG", 40), (MEMORY, "AVG", 20)], ResourceData(0, 0, False)),
        ([], ResourceData(0, 0, False)),
    ],
)
def test_resource_data_rules(rows: list[tuple[str, str, float]], expected: ResourceData) -> None:
    assert resource_data(_metrics(*rows), CPU) == expected


def test_resource_data_arrays_follow_node_order() -> None:
    snapshot = WatcherMetrics.parse(DOCUMENT)
    arrays = resource_data_arrays(snapshot, ["node-empty", "node-1", "missing"], CPU)
    assert arrays.avg.tolist() == [0.0, 20.5, 0.0]
    assert arrays.stdev.tolist() == [0.0, 5.0, 0.0]
    assert arrays.valid.tolist() == [False, True, False]
