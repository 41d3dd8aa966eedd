"""The demo's cluster and workload: mixed node sizes with uneven starting load, VMs with disks, and
the high-priority VM of the preemption scene; all the same for every run with the same seed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.kube.quantity import int_value, milli_value
from secsched_devtools.cluster.localcluster import ClusterOptions
from secsched_devtools.cluster.nodes import MAX_VOLUMES_LABEL, STORAGE_LABEL, plan_nodes
from secsched_devtools.demo.workload import (
    CRITICAL_PRIORITY,
    Vm,
    VmSize,
    disk_fleet,
    memory_heavy,
    vm_with_disk,
)

STORAGE_PER_CORE_GI = 64
"""Each node's local storage pool per core (a 32-core VM host with 2Ti of local disk): room for
every disk TargetLoadPacking may pack there, so storage never decides a placement here."""


@dataclass(frozen=True)
class Scenario:
    nodes: int = 20
    vms: int = 40
    web_pods: int = 12
    arrival_seconds: float = 60.0
    seed: int = 7
    target: int = 70  # seed 000's targetUtilization
    zones: int = 3
    preemption: bool = True

    def starting_load(self) -> dict[str, Any]:
        """Uneven base load: most nodes fairly quiet, a few busy, one or two nearly full."""
        rng = random.Random(self.seed)
        nodes = {}
        for index in range(self.nodes):
            cpu = rng.choice((0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.45, 0.55, 0.65, 0.80, 0.90))
            nodes[f"kwok-node-{index}"] = {"cpu": cpu, "memory": round(cpu * 0.6, 2), "noise": 0.01}
        return {"default": {"cpu": 0.1, "memory": 0.1, "noise": 0.01}, "nodes": nodes, "podFactor": 1.0}

    def cluster_options(self, name: str) -> ClusterOptions:
        return ClusterOptions(
            name=name,
            nodes=self.nodes,
            shape=None,
            zones=self.zones,
            default_scheduler=True,
            prometheus=True,
            scrape_interval="2s",
            base_load=self.starting_load(),
        )

    def node_memory(self) -> dict[str, int]:
        """Each node's allocatable memory in bytes, as the cluster will create it."""
        return {
            node["metadata"]["name"]: int_value(node["status"]["allocatable"]["memory"])
            for node in plan_nodes(self.nodes, None, self.zones)
        }

    def storage_labels(self) -> dict[str, dict[str, str]]:
        """Node -> the labels that size its storage: a pool and a volume limit that grow with its cores."""
        labels = {}
        for node in plan_nodes(self.nodes, None, self.zones):
            cores = milli_value(node["status"]["capacity"]["cpu"]) // 1000
            labels[node["metadata"]["name"]] = {
                STORAGE_LABEL: f"{cores * STORAGE_PER_CORE_GI}Gi",
                MAX_VOLUMES_LABEL: str(max(16, 2 * cores)),
            }
        return labels

    def heavy_size(self) -> VmSize | None:
        """The memory-heavy VM size of the preemption scene, from the node sizes alone: bigger than
        any node but the largest can hold, and more than half of a largest node, so each largest
        node holds one at most. None when no size is both."""
        memory = self.node_memory().values()
        largest = max(memory, default=0)
        second = max((value for value in memory if value < largest), default=0)
        for guest_gi in range(1, largest // 1024**3 + 1):
            size = memory_heavy(guest_gi)
            if size.memory_request > second and 2 * size.memory_request > largest >= size.memory_request:
                return size
        return None

    def heavy_count(self) -> int:
        """One memory-heavy VM per largest node (if the fleet is that big): together they leave no
        node with room for another, whatever the scheduler chose for the rest."""
        memory = self.node_memory().values()
        largest = max(memory, default=0)
        return min(self.vms, sum(value == largest for value in memory)) if self.heavy_size() else 0

    def fleet(self) -> list[Vm]:
        """The VMs, each with its root disk: the memory-heavy ones first, then the mixed sizes."""
        return disk_fleet(self.vms, self.seed, self.heavy_size(), self.heavy_count())

    def preemptor(self) -> Vm | None:
        """The business-critical VM that arrives once the fleet is placed: memory-heavy too, so it
        fits on no node unless a lower-priority VM is evicted."""
        size = self.heavy_size()
        if size is None or not self.preemption:
            return None
        return vm_with_disk("rhel9-prod-db", size, CRITICAL_PRIORITY)
