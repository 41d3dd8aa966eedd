"""The node-load model behind the exporter: what "real load" means on fake nodes.

A node's CPU (and memory) utilisation, as a ratio of its capacity, is

    base(node) + sum over pods bound to it of usage(pod) / capacity(node)  (+ noise)

clamped to [0, 1], where usage(pod) is the pod's `load.secsched.io/cpu` (or `/memory`)
annotation if it has one, else its requests times the pod factor. Base loads and the
pod factor can be changed at run time. Noise is Gaussian, per node, so that Prometheus'
stddev_over_time has something to measure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from secondary_scheduler.kube.podphase import is_terminal
from secondary_scheduler.kube.quantity import int_value, milli_value

CPU_ANNOTATION = "load.secsched.io/cpu"
MEMORY_ANNOTATION = "load.secsched.io/memory"


@dataclass
class BaseLoad:
    """A node's own load, before any of its pods: ratios in [0, 1] and a noise sigma."""

    cpu: float = 0.0
    memory: float = 0.0
    noise: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any], fallback: BaseLoad | None = None) -> BaseLoad:
        base = fallback or cls()
        values = {
            "cpu": float(data.get("cpu", base.cpu)),
            "memory": float(data.get("memory", base.memory)),
            "noise": float(data.get("noise", base.noise)),
        }
        for key, value in values.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"base load {key}={value} is outside [0, 1]")
        return cls(**values)


def _container_requests(pod: dict[str, Any]) -> tuple[int, int]:
    cpu = memory = 0
    for container in pod.get("spec", {}).get("containers", []):
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += milli_value(requests.get("cpu", 0))
        memory += int_value(requests.get("memory", 0))
    return cpu, memory


def pod_usage(pod: dict[str, Any], factor: float) -> tuple[float, float]:
    """(cpu millicores, memory bytes) the pod puts on its node under this model."""
    annotations = pod.get("metadata", {}).get("annotations") or {}
    cpu_request, memory_request = _container_requests(pod)
    cpu = milli_value(annotations[CPU_ANNOTATION]) if CPU_ANNOTATION in annotations else cpu_request * factor
    memory = (
        int_value(annotations[MEMORY_ANNOTATION])
        if MEMORY_ANNOTATION in annotations
        else memory_request * factor
    )
    return float(cpu), float(memory)


@dataclass
class LoadModel:
    """Current base loads, pod factor and the cluster's nodes and pods; yields utilisation."""

    default: BaseLoad = field(default_factory=BaseLoad)
    nodes: dict[str, BaseLoad] = field(default_factory=dict)
    pod_factor: float = 1.0
    seed: int = 0
    pod_series: bool = False
    """Also publish each pod's usage under cAdvisor's names (container_cpu_usage_seconds_total,
    container_memory_working_set_bytes), as a kubelet would: what `secsched snapshot --history`
    records. Off unless asked (``{"podSeries": true}``): a series per pod costs Prometheus at scale."""

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def update(self, data: dict[str, Any]) -> None:
        """Apply `{"default": {...}, "nodes": {name: {...}}, "podFactor": f}`; all or nothing."""
        default = BaseLoad.from_dict(data["default"], self.default) if "default" in data else self.default
        nodes = dict(self.nodes)
        for name, values in (data.get("nodes") or {}).items():
            nodes[name] = BaseLoad.from_dict(values, nodes.get(name, default))
        factor = float(data.get("podFactor", self.pod_factor))
        if factor < 0:
            raise ValueError(f"podFactor={factor} must be >= 0")
        pod_series = data.get("podSeries", self.pod_series)
        if not isinstance(pod_series, bool):
            raise ValueError(f"podSeries={pod_series!r} must be true or false")
        self.default, self.nodes, self.pod_factor, self.pod_series = default, nodes, factor, pod_series

    def to_dict(self) -> dict[str, Any]:
        return {
            "default": vars(self.default),
            "nodes": {name: vars(load) for name, load in sorted(self.nodes.items())},
            "podFactor": self.pod_factor,
            "podSeries": self.pod_series,
        }

    def utilisation(
        self,
        nodes: dict[str, dict[str, Any]],
        pods_by_node: dict[str, list[dict[str, Any]]],
        noisy: bool = True,
    ) -> dict[str, tuple[float, float]]:
        """node name -> (cpu ratio, memory ratio), each in [0, 1]."""
        result = {}
        for name, node in nodes.items():
            capacity = node.get("status", {}).get("capacity") or {}
            cpu_capacity = milli_value(capacity.get("cpu", 0))
            memory_capacity = int_value(capacity.get("memory", 0))
            base = self.nodes.get(name, self.default)
            cpu_used = memory_used = 0.0
            for pod in pods_by_node.get(name, []):
                if is_terminal(pod):
                    continue
                pod_cpu, pod_memory = pod_usage(pod, self.pod_factor)
                cpu_used += pod_cpu
                memory_used += pod_memory
            cpu = base.cpu + (cpu_used / cpu_capacity if cpu_capacity else 0.0)
            memory = base.memory + (memory_used / memory_capacity if memory_capacity else 0.0)
            if noisy and base.noise > 0:
                cpu += self._random.gauss(0.0, base.noise)
                memory += self._random.gauss(0.0, base.noise)
            result[name] = (min(1.0, max(0.0, cpu)), min(1.0, max(0.0, memory)))
        return result
