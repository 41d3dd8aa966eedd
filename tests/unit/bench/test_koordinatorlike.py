"""The Koordinator-like comparison plugin (bench/koordinatorlike.py) in memory: the usage-threshold
Filter, the estimate of pods assigned since the metrics were reported, the least-used Score, and
expired metrics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bench.koordinatorlike import LoadAwareScheduling
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.plugins.trimaran.services import SERVICE, TrimaranServices
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

START = 1_700_000_000.0
PROMETHEUS = {"metricProvider": {"type": "Prometheus", "address": "http://prom:9090"}}


def node(name: str) -> dict[str, Any]:
    resources = {"cpu": "10", "memory": "100Gi"}
    return {"metadata": {"name": name}, "status": {"capacity": resources, "allocatable": dict(resources)}}


def pod(
    name: str, cpu: str = "1", memory: str = "10Gi", limits: dict[str, str] | None = None
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = limits
    return {
        "metadata": {"name": name, "namespace": "vms", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "compute", "resources": resources}]},
        "status": {},
    }


class Cluster:
    """Two nodes, a clock, and the (cpu %, memory %) the metric source reports per node."""

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        self.now = START
        self.usage: dict[str, tuple[float, float]] = {"calm": (20.0, 20.0), "busy": (60.0, 20.0)}
        registry = CollectorRegistry()
        self.services = TrimaranServices(
            registry=registry, clock=lambda: self.now, provider_factory=lambda _: _Source(self)
        )
        handle = Handle(metrics_registry=registry)
        handle.register_service(SERVICE, self.services)
        self.plugin = LoadAwareScheduling(
            validated_args(LoadAwareScheduling, {**PROMETHEUS, **(args or {})}), handle
        )
        self.table = NodeTable.from_objects([node("calm"), node("busy")])
        self.slots = np.array([self.table.slot_of("calm"), self.table.slot_of("busy")], dtype=np.intp)

    async def refresh(self) -> None:
        await self.services.collectors.collectors()[0].refresh()

    def score(self, incoming: dict[str, Any]) -> dict[str, int]:
        scores = self.plugin.score(CycleState(), PodInfo.from_pod(incoming), self.table, self.slots)
        return dict(zip(("calm", "busy"), scores.tolist(), strict=True))

    def rejected(self, incoming: dict[str, Any]) -> set[str]:
        found = self.plugin.filter(CycleState(), PodInfo.from_pod(incoming), self.table, self.slots)
        return {n for r in found for n, out in zip(("calm", "busy"), r.mask.tolist(), strict=True) if out}


class _Source:
    windows: tuple[str, ...] = ("15m",)

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    async def fetch(self, window: str) -> WatcherMetrics:
        end = int(self.cluster.now)
        data = {
            name: {
                "metrics": [
                    {"name": "cpu", "type": "CPU", "operator": "AVG", "rollup": "15m", "value": cpu},
                    {"name": "mem", "type": "Memory", "operator": "AVG", "rollup": "15m", "value": memory},
                ]
            }
            for name, (cpu, memory) in self.cluster.usage.items()
        }
        return WatcherMetrics.parse(
            {
                "timestamp": end,
                "window": {"duration": "15m", "start": end - 900, "end": end},
                "source": "Prometheus",
                "data": {"NodeMetricsMap": data},
            }
        )

    async def close(self) -> None:
        return None


async def test_the_filter_rejects_nodes_over_the_usage_thresholds() -> None:
    cluster = Cluster()
    await cluster.refresh()
    assert cluster.rejected(pod("p")) == set()  # 60 % CPU is under the default 65 %
    cluster.usage["busy"] = (66.0, 20.0)
    cluster.now += 30
    await cluster.refresh()
    assert cluster.rejected(pod("p")) == {"busy"}
    cluster.usage["busy"] = (50.0, 96.0)  # memory's threshold is 95 %
    cluster.now += 30
    await cluster.refresh()
    assert cluster.rejected(pod("p")) == {"busy"}


async def test_the_score_is_least_used_with_the_pod_estimated_from_requests_times_the_factors() -> None:
    cluster = Cluster()
    await cluster.refresh()
    # calm: cpu 20 % + 1 core x 85 % of 10 = 28.5 % used, memory 20 % + 10Gi x 70 % = 27 %:
    # (71.5 + 73) / 2 = 72.25 -> 72. busy: cpu 68.5 % -> (31.5 + 73) / 2 = 52.25 -> 52.
    assert cluster.score(pod("p")) == {"calm": 72, "busy": 52}
    # A pod with limits is estimated at its limits: 2 cores (+20 %) and 20Gi (+20 %).
    assert cluster.score(pod("q", limits={"cpu": "2", "memory": "20Gi"})) == {"calm": 60, "busy": 40}


async def test_pods_assigned_after_the_report_count_until_the_metrics_show_them() -> None:
    cluster = Cluster()
    await cluster.refresh()
    before = cluster.score(pod("p"))
    cluster.now += 5
    cluster.services.recently_scheduled.record(pod("new", cpu="4", memory="0"), "calm", timestamp=cluster.now)
    after = cluster.score(pod("p"))
    assert after["busy"] == before["busy"]
    assert after["calm"] == before["calm"] - 17  # 4 cores x 85 % = 34 % of cpu, half the weight
    cluster.now += 30  # the next report is taken after the binding: the pod is in it, not added again
    await cluster.refresh()
    assert cluster.score(pod("p")) == before


async def test_expired_metrics_score_zero_and_filter_nothing() -> None:
    cluster = Cluster({"nodeMetricExpirationSeconds": 60, "metricsStalenessLimit": "10m"})
    cluster.usage["busy"] = (90.0, 20.0)
    await cluster.refresh()
    assert cluster.rejected(pod("p")) == {"busy"}
    cluster.now += 61
    assert cluster.score(pod("p")) == {"calm": 0, "busy": 0}
    assert cluster.rejected(pod("p")) == set()


def test_args_refuse_resources_it_does_not_read() -> None:
    with pytest.raises(ValueError, match="only cpu and memory"):
        Cluster({"usageThresholds": {"cpu": 65, "nvidia.com/gpu": 50}})
    with pytest.raises(ValidationError, match="nodeMetricExpirationSeconds"):
        validated_args(LoadAwareScheduling, {**PROMETHEUS, "nodeMetricExpirationSeconds": 0})
