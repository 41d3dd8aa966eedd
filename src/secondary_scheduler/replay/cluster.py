"""The cluster a replay starts from, and its load as the replay goes.

Two ways in: a ``secsched snapshot`` file (its nodes, the pods bound to them and the load its
metrics show) or a generated fleet of identical nodes. While the replay runs, ``ClusterLoad``
keeps each node's CPU and memory in use as numpy arrays: a pod's use follows its trace (its
requests until its first sample), and a node's use is its background load plus its pods' use.
What the scheduler counts (requests) lives in the framework's NodeTable, not here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.quantity import QuantityError, format_bytes, int_value, milli_value
from secondary_scheduler.replay.trace import UsageBatch, UsageSample

DEFAULT_NODE_SHAPE = "32,128Gi"
MAX_PODS_PER_NODE = 110
"""The kubelet's default maxPods: a generated node's pods capacity."""
GENERATED_NODE_PREFIX = "node-"
_FIRST_PODS = 1024


@dataclass(frozen=True)
class NodeShape:
    cpu_millis: int
    memory_bytes: int

    @classmethod
    def parse(cls, text: str) -> NodeShape:
        """``CPU,MEMORY`` as Kubernetes quantities (``32,128Gi``); ValueError says what is wrong."""
        parts = [part.strip() for part in text.split(",")]
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"{text!r} is not CPU,MEMORY: write e.g. {DEFAULT_NODE_SHAPE}")
        try:
            shape = cls(milli_value(parts[0]), int_value(parts[1]))
        except (QuantityError, ValueError) as error:
            raise ValueError(f"{text!r}: {error}: write quantities, e.g. {DEFAULT_NODE_SHAPE}") from error
        if shape.cpu_millis <= 0 or shape.memory_bytes <= 0:
            raise ValueError(f"{text!r}: CPU and memory must be positive, e.g. {DEFAULT_NODE_SHAPE}")
        return shape

    def node(self, name: str) -> JSON:
        """A Ready v1 Node of this shape (allocatable = capacity: nothing reserved for the system)."""
        resources = {
            "cpu": f"{self.cpu_millis}m",
            "memory": format_bytes(self.memory_bytes),
            "pods": str(MAX_PODS_PER_NODE),
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {
                "capacity": dict(resources),
                "allocatable": dict(resources),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }


@dataclass(frozen=True)
class StartingCluster:
    """Nodes, the pods already bound to them, and each node's load that no replayed pod explains."""

    nodes: list[JSON]
    pods: list[JSON] = field(default_factory=list)
    background_cpu: Mapping[str, float] = field(default_factory=dict)
    """Node -> cores in use besides the bound pods' requests (system daemons, unlisted pods)."""
    background_memory: Mapping[str, float] = field(default_factory=dict)
    """Node -> bytes in use besides the bound pods' requests."""
    objects: list[JSON] = field(default_factory=list)
    """Other objects plugins read (PVs, StorageClasses, PDBs...): a snapshot's ``objects``."""
    source: str = ""
    """How it was made, for the report: ``1000 generated nodes of 32 cores, 128Gi`` or the file."""

    @classmethod
    def generated(cls, count: int, shape: NodeShape) -> StartingCluster:
        width = max(4, len(str(count - 1)))
        nodes = [shape.node(f"{GENERATED_NODE_PREFIX}{index:0{width}d}") for index in range(count)]
        cores = shape.cpu_millis / 1000
        described = f"{count} generated nodes of {cores:g} cores, {format_bytes(shape.memory_bytes)}"
        return cls(nodes=nodes, source=described)

    @classmethod
    def from_snapshot(
        cls,
        nodes: list[JSON],
        pods: list[JSON],
        usage: Mapping[str, tuple[float, float]],
        source: str,
        objects: list[JSON] | None = None,
    ) -> StartingCluster:
        """``usage``: node -> (cpu %, memory %) of its capacity as the snapshot's metrics show it.

        The bound pods are taken to use their requests; what the metrics show beyond that is the
        node's background load (at least 0), constant through the replay.
        """
        requested: dict[str, list[float]] = {}
        for pod in pods:
            info = PodInfo.from_pod(pod)
            totals = requested.setdefault(info.node_name, [0.0, 0.0])
            totals[0] += info.requests.get("cpu", 0) / 1000
            totals[1] += info.requests.get("memory", 0)
        background_cpu: dict[str, float] = {}
        background_memory: dict[str, float] = {}
        for node in nodes:
            name = node["metadata"]["name"]
            cpu_cores, memory_bytes = capacity_of(node)
            cpu_percent, memory_percent = usage.get(name, (0.0, 0.0))
            pods_cpu, pods_memory = requested.get(name, (0.0, 0.0))
            background_cpu[name] = max(0.0, cpu_percent / 100 * cpu_cores - pods_cpu)
            background_memory[name] = max(0.0, memory_percent / 100 * memory_bytes - pods_memory)
        return cls(nodes, pods, background_cpu, background_memory, list(objects or ()), source)


def capacity_of(node: JSON) -> tuple[float, float]:
    """(cores, bytes) of a node's ``status.capacity`` (allocatable where capacity is missing)."""
    status = node.get("status") or {}
    capacity = {**(status.get("allocatable") or {}), **(status.get("capacity") or {})}
    return milli_value(capacity.get("cpu", 0)) / 1000, float(int_value(capacity.get("memory", 0)))


class ClusterLoad:
    """Per node, the CPU (cores) and memory (bytes) in use now; per pod, what it uses and where.

    Pods live in slots of growing arrays (their node, cores, bytes), so that the usage samples of
    one instant (thousands of pods) are applied in a few numpy operations.
    """

    def __init__(self, cluster: StartingCluster) -> None:
        self.names: list[str] = [node["metadata"]["name"] for node in cluster.nodes]
        self.index: dict[str, int] = {name: index for index, name in enumerate(self.names)}
        capacities = [capacity_of(node) for node in cluster.nodes]
        self.cpu_capacity: FloatArray = np.array([cpu for cpu, _ in capacities], dtype=np.float64)
        self.memory_capacity: FloatArray = np.array([memory for _, memory in capacities], dtype=np.float64)
        self.cpu_used: FloatArray = np.array(
            [cluster.background_cpu.get(name, 0.0) for name in self.names], dtype=np.float64
        )
        self.memory_used: FloatArray = np.array(
            [cluster.background_memory.get(name, 0.0) for name in self.names], dtype=np.float64
        )
        self.pod_count: IntArray = np.zeros(len(self.names), dtype=np.int64)
        """Per node, the replayed pods (the trace's VMs) on it now."""
        self.static_pods: IntArray = np.zeros(len(self.names), dtype=np.int64)
        """Per node, the pods the starting cluster had on it (they stay)."""
        self._slot: dict[str, int] = {}
        """Pod key -> its slot in the pod arrays."""
        self._free: list[int] = list(range(_FIRST_PODS - 1, -1, -1))
        self._pod_node: IntArray = np.full(_FIRST_PODS, -1, dtype=np.int64)
        """Per pod slot, its node's index (-1: not on a node)."""
        self._pod_cpu: FloatArray = np.zeros(_FIRST_PODS, dtype=np.float64)
        self._pod_memory: FloatArray = np.zeros(_FIRST_PODS, dtype=np.float64)
        self._marks: IntArray = np.zeros(_FIRST_PODS, dtype=np.int64)
        """Scratch, per pod slot: ``_repeats``' marks."""

    def __len__(self) -> int:
        return len(self.names)

    def count_static_pods(self, pods: Iterable[JSON]) -> None:
        """The starting cluster's bound pods: they make their nodes in use, and use their requests
        (``StartingCluster.from_snapshot`` took those out of the measured load, leaving the background)."""
        for pod in pods:
            index = self.index.get(str((pod.get("spec") or {}).get("nodeName") or ""))
            if index is not None:
                self.static_pods[index] += 1
                requests = PodInfo.from_pod(pod).requests
                self.cpu_used[index] += requests.get("cpu", 0) / 1000
                self.memory_used[index] += requests.get("memory", 0)

    def in_use(self) -> BoolArray:
        """Per node, whether any pod runs on it (the nodes a cluster pays for)."""
        return (self.pod_count + self.static_pods) > 0

    def pod_arrived(self, key: str, cpu: float, memory: float) -> None:
        """A pod known from now on, not on a node yet, using ``cpu`` cores and ``memory`` bytes."""
        if not self._free:
            self._grow()
        slot = self._free.pop()
        self._slot[key] = slot
        self._pod_node[slot] = -1
        self._pod_cpu[slot] = cpu
        self._pod_memory[slot] = memory

    def known(self, key: str) -> bool:
        return key in self._slot

    def node_of(self, key: str) -> int:
        slot = self._slot.get(key)
        return int(self._pod_node[slot]) if slot is not None else -1

    def use_of(self, key: str) -> tuple[float, float]:
        """(cores, bytes) the pod uses now."""
        slot = self._slot[key]
        return float(self._pod_cpu[slot]), float(self._pod_memory[slot])

    def place(self, key: str, node: str) -> None:
        """The pod was bound to ``node``: its use counts there from now on."""
        slot = self._slot[key]
        self._off_node(slot)
        index = self.index[node]
        self._pod_node[slot] = index
        self.cpu_used[index] += self._pod_cpu[slot]
        self.memory_used[index] += self._pod_memory[slot]
        self.pod_count[index] += 1

    def remove(self, key: str) -> None:
        """The pod is gone (deleted, preempted, or its trace ended)."""
        slot = self._slot.pop(key, None)
        if slot is not None:
            self._off_node(slot)
            self._free.append(slot)

    def set_use(self, keys: Sequence[str], cpu: Sequence[float], memory: Sequence[float]) -> None:
        """Usage samples: each pod uses this much from now on (pods not known now are ignored)."""
        lookup = self._slot.get
        slots = np.array([lookup(key, -1) for key in keys], dtype=np.int64)
        self._set_use(slots, np.asarray(cpu, dtype=np.float64), np.asarray(memory, dtype=np.float64))

    def apply(self, samples: Sequence[UsageSample | UsageBatch]) -> None:
        """``set_use`` of a trace's usage samples, single or batched (an instant's, in stream order)."""
        lookup = self._slot.get
        if len(samples) == 1 and type(samples[0]) is UsageBatch:  # a generated instant: one batch
            batch = samples[0]
            slots = np.fromiter(map(lookup, batch.keys, repeat(-1)), np.int64, len(batch.keys))
            self._set_use(slots, batch.cpu, batch.memory)
            return
        keys: list[str] = []
        cpu: list[float] = []
        memory: list[float] = []
        for sample in samples:
            if isinstance(sample, UsageBatch):
                keys.extend(sample.keys)
                cpu.extend(sample.cpu.tolist())
                memory.extend(sample.memory.tolist())
            else:
                keys.append(f"{sample.namespace}/{sample.name}")
                cpu.append(sample.cpu)
                memory.append(sample.memory)
        slots = np.fromiter(map(lookup, keys, repeat(-1)), np.int64, len(keys))
        self._set_use(slots, np.array(cpu, dtype=np.float64), np.array(memory, dtype=np.float64))

    def _set_use(self, slots: IntArray, cpu: FloatArray, memory: FloatArray) -> None:
        """The pods in ``slots`` (-1: not known, ignored) use this much from now on, on their nodes too."""
        known = slots >= 0
        if not known.all():
            slots, cpu, memory = slots[known], cpu[known], memory[known]
        if self._repeats(slots):
            # A pod sampled twice in one batch: its last sample is the one that holds.
            last = len(slots) - 1 - np.unique(slots[::-1], return_index=True)[1]
            slots, cpu, memory = slots[last], cpu[last], memory[last]
        nodes = self._pod_node[slots]
        placed = nodes >= 0
        count = len(self.names)
        on = nodes[placed]
        self.cpu_used += np.bincount(on, (cpu - self._pod_cpu[slots])[placed], minlength=count)
        self.memory_used += np.bincount(on, (memory - self._pod_memory[slots])[placed], minlength=count)
        self._pod_cpu[slots] = cpu
        self._pod_memory[slots] = memory

    def _repeats(self, slots: IntArray) -> bool:
        """Whether a slot comes twice in ``slots`` (linear: each position marks its slot, and a slot
        marked twice keeps only one of the marks)."""
        positions = np.arange(len(slots))
        self._marks[slots] = positions
        return bool((self._marks[slots] != positions).any())

    def cpu_utilization(self) -> FloatArray:
        """Per node, CPU in use over capacity (1.0 = every core busy; may exceed 1 when overcommitted)."""
        return _utilization(self.cpu_used, self.cpu_capacity)

    def memory_utilization(self) -> FloatArray:
        return _utilization(self.memory_used, self.memory_capacity)

    def _off_node(self, slot: int) -> None:
        index = int(self._pod_node[slot])
        if index >= 0:
            self.cpu_used[index] -= self._pod_cpu[slot]
            self.memory_used[index] -= self._pod_memory[slot]
            self.pod_count[index] -= 1
            self._pod_node[slot] = -1

    def _grow(self) -> None:
        size = len(self._pod_node)
        self._pod_node = np.concatenate([self._pod_node, np.full(size, -1, dtype=np.int64)])
        self._pod_cpu = np.concatenate([self._pod_cpu, np.zeros(size)])
        self._pod_memory = np.concatenate([self._pod_memory, np.zeros(size)])
        self._marks = np.zeros(2 * size, dtype=np.int64)
        self._free.extend(range(2 * size - 1, size - 1, -1))


def _utilization(used: FloatArray, capacity: FloatArray) -> FloatArray:
    """``used / capacity``, 0 where there is no capacity (taken on every scrape and measurement)."""
    if capacity.all():
        return used / capacity
    return np.divide(used, capacity, out=np.zeros_like(used), where=capacity > 0)


def requests_of(requests: Mapping[str, str]) -> tuple[float, float]:
    """(cores, bytes) of a trace pod's requests."""
    return milli_value(requests.get("cpu", 0)) / 1000, float(int_value(requests.get("memory", 0)))


def names_of(nodes: Sequence[JSON]) -> list[str]:
    return [node["metadata"]["name"] for node in nodes]
