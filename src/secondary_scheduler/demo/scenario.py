"""The demo's cluster: mixed node sizes with uneven starting load, the same for every run."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.cluster.localcluster import ClusterOptions


@dataclass(frozen=True)
class Scenario:
    nodes: int = 20
    vms: int = 40
    web_pods: int = 12
    arrival_seconds: float = 60.0
    seed: int = 7
    target: int = 70  # seed 000's targetUtilization

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
            zones=3,
            default_scheduler=True,
            prometheus=True,
            scrape_interval="2s",
            base_load=self.starting_load(),
        )
