"""The simulated sources hand the collector arrays (``fetch_readings``); the metrics view must read
from them exactly what it would parse from the whole document the same source serves (``fetch``)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.plugins.trimaran.args import KUBERNETES_METRICS_SERVER, PROMETHEUS
from secondary_scheduler.plugins.trimaran.collector import MetricsCollector
from secondary_scheduler.plugins.trimaran.nodeusage import SnapshotIndex
from secondary_scheduler.plugins.trimaran.source import WATCHER, MetricSource
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics
from secondary_scheduler.replay.clock import SimClock
from secondary_scheduler.replay.cluster import ClusterLoad, NodeShape, StartingCluster
from secondary_scheduler.replay.metrics import MetricsSettings, SimulatedMetrics

SHAPE = NodeShape(cpu_millis=8_000, memory_bytes=32 * 2**30)


def assert_same(parsed: SnapshotIndex, taken: SnapshotIndex) -> None:
    assert parsed.row_of == taken.row_of
    for resource in ("cpu", "memory"):
        a, b = getattr(parsed, resource), getattr(taken, resource)
        np.testing.assert_array_equal(a.avg, b.avg)
        np.testing.assert_array_equal(a.stdev, b.stdev)
        np.testing.assert_array_equal(a.valid, b.valid)
    np.testing.assert_array_equal(parsed.cpu_percent, taken.cpu_percent)  # NaN where none, in both
    np.testing.assert_array_equal(parsed.has_metrics, taken.has_metrics)
    assert parsed.missing_series == taken.missing_series


@pytest.mark.parametrize("kind", [PROMETHEUS, KUBERNETES_METRICS_SERVER, WATCHER])
def test_readings_are_what_the_document_of_the_same_fetch_parses_to(kind: str) -> None:
    clock = SimClock()
    load = ClusterLoad(StartingCluster.generated(6, SHAPE))
    settings = MetricsSettings(lag=30.0, missing_nodes=frozenset({"node-0002"}))
    metrics = SimulatedMetrics(load, clock, settings, Handle(clock=clock.monotonic, wall_clock=clock.wall))
    provider = metrics.provider_for(MetricSource(kind=kind))
    rng = np.random.default_rng(7)
    for step in range(60):  # 30 minutes of scrapes, the load changing under them
        clock.advance(step * settings.scrape_interval)
        load.cpu_used[:] = rng.uniform(0, 8, len(load))
        load.memory_used[:] = rng.uniform(0, 32 * 2**30, len(load))
        metrics.sample()
    for as_of in (0.0, 600.0, 1770.0):  # before the lag's first sample, mid-way, at the end
        provider.as_of = as_of
        for window in provider.windows:
            document = asyncio.run(provider.fetch(window))
            header, readings = asyncio.run(provider.fetch_readings(window))
            assert header.model_dump() == {**document.model_dump(), "data": {"node_metrics_map": {}}}
            assert_same(SnapshotIndex.build(document), SnapshotIndex.of_readings(readings))
            assert "node-0002" not in readings.names


def test_the_collector_keeps_the_readings_and_the_view_takes_them_unparsed() -> None:
    clock = SimClock()
    load = ClusterLoad(StartingCluster.generated(3, SHAPE))
    handle = Handle(clock=clock.monotonic, wall_clock=clock.wall)
    metrics = SimulatedMetrics(load, clock, MetricsSettings(), handle)
    provider = metrics.provider_for(MetricSource(kind=PROMETHEUS))
    load.cpu_used[:] = [1.0, 2.0, 4.0]
    metrics.sample()
    collector = MetricsCollector("simulated", provider, TrimaranMetrics(None), clock=clock.wall)
    assert asyncio.run(collector.refresh())
    snapshot, stale = collector.latest()
    assert snapshot is not None and not stale
    assert snapshot.readings is not None and snapshot.node_count == 3
    assert snapshot.metrics.data.node_metrics_map == {}  # the header only: nothing to parse
    np.testing.assert_allclose(snapshot.readings.cpu.avg, [12.5, 25.0, 50.0])
