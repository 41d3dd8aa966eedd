"""An in-memory cluster for LoadAwarePacking: a NodeTable, a clock, and metrics the test sets."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.plugins.loadawarepacking.notes import LoadAwareNote
from secondary_scheduler.plugins.loadawarepacking.plugin import LoadAwarePacking
from secondary_scheduler.plugins.trimaran.providers import FetchError
from secondary_scheduler.plugins.trimaran.services import SERVICE, TrimaranServices
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

START = 1_700_000_000.0
CORES = 16
PROMETHEUS = {"metricProvider": {"type": "Prometheus", "address": "http://prom:9090"}}


def node(name: str, cores: int = CORES) -> dict[str, Any]:
    resources = {"cpu": str(cores), "memory": "64Gi"}
    return {"metadata": {"name": name}, "status": {"capacity": resources, "allocatable": dict(resources)}}


def vm(
    name: str,
    flavor: str = "small",
    request: str = "100m",
    limit: str | None = None,
    node_name: str = "",
    bound_at: float | None = None,
    created_at: float | None = None,
) -> dict[str, Any]:
    """A VM launcher pod of a flavour; ``bound_at`` gives it the PodScheduled condition binding sets."""
    resources: dict[str, Any] = {"requests": {"cpu": request, "memory": "1Gi"}}
    if limit is not None:
        resources["limits"] = {"cpu": limit}
    pod: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "vms",
            "uid": f"uid-{name}",
            "labels": {"kubevirt.io/size": flavor},
        },
        "spec": {"containers": [{"name": "compute", "resources": resources}]},
        "status": {},
    }
    if node_name:
        pod["spec"]["nodeName"] = node_name
    if bound_at is not None:
        stamp = datetime.fromtimestamp(bound_at, UTC).isoformat()
        condition = {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}
        pod["status"]["conditions"] = [condition]
    if created_at is not None:
        pod["metadata"]["creationTimestamp"] = datetime.fromtimestamp(created_at, UTC).isoformat()
    return pod


class World:
    """Nodes, a clock the test moves, and per-node CPU (mean, stddev) percent the source reports."""

    def __init__(self, nodes: Mapping[str, int], args: Mapping[str, Any] | None = None) -> None:
        self.now = START
        self.cpu: dict[str, tuple[float, float]] = {}
        self.down = False
        self.registry = CollectorRegistry()
        self.services = TrimaranServices(
            registry=self.registry, clock=lambda: self.now, provider_factory=lambda _: _Provider(self)
        )
        self.events: list[tuple[str, str, str, str]] = []
        """(pod name, type, reason, note) of each Event the plugin recorded."""
        self.handle = Handle(
            metrics_registry=self.registry,
            event_sink=lambda pod, _reporter, kind, reason, _action, note: self.events.append(
                (pod.name, kind, reason, note)
            ),
        )
        self.handle.register_service(SERVICE, self.services)
        config = {**PROMETHEUS, **(args or {})}
        self.plugin = LoadAwarePacking(validated_args(LoadAwarePacking, config), self.handle)
        self.table = NodeTable.from_objects([node(name, cores) for name, cores in nodes.items()])

    async def refresh(self) -> bool:
        """One fetch by the collector (a snapshot of the current ``cpu``, window ending now)."""
        return await self.services.collectors.collectors()[0].refresh()

    def place(self, pod: dict[str, Any], node_name: str) -> PodInfo:
        info = PodInfo.from_pod(pod)
        self.table.add_pod(info, node_name)
        return info

    def score(self, pod: dict[str, Any]) -> tuple[dict[str, int], LoadAwareNote]:
        names = [n for n in self.table.names if n]
        slots = np.array([self.table.slot_of(n) for n in names], dtype=np.intp)
        state = CycleState()
        scores = self.plugin.score(state, PodInfo.from_pod(pod), self.table, slots)
        note = state.notes[self.plugin.name]
        assert isinstance(note, LoadAwareNote)
        return dict(zip(names, scores.tolist(), strict=True)), note

    def predicted(self, pod: dict[str, Any]) -> dict[str, float]:
        names = [n for n in self.table.names if n]
        slots = np.array([self.table.slot_of(n) for n in names], dtype=np.intp)
        prediction = self.plugin.predict(PodInfo.from_pod(pod), self.table, slots)
        return dict(zip(names, prediction.percent.tolist(), strict=True))

    def gauge(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


class _Provider:
    windows: tuple[str, ...] = ("15m",)

    def __init__(self, world: World) -> None:
        self.world = world

    async def fetch(self, window: str) -> WatcherMetrics:
        if self.world.down:
            raise FetchError("connection refused")
        end = int(self.world.now)
        metrics = {
            name: [
                {"name": "cpu", "type": "CPU", "operator": "AVG", "rollup": "15m", "value": mean},
                {"name": "cpu", "type": "CPU", "operator": "STD", "rollup": "15m", "value": std},
            ]
            for name, (mean, std) in self.world.cpu.items()
        }
        return WatcherMetrics.parse(
            {
                "timestamp": end,
                "window": {"duration": "15m", "start": end - 900, "end": end},
                "source": "Prometheus",
                "data": {"NodeMetricsMap": {n: {"metrics": m} for n, m in metrics.items()}},
            }
        )

    async def close(self) -> None:
        return None
