"""Placement quality: how a set of placements leaves the nodes' real load.

Used by the demo's report and by the benchmarks, for ours and upstream's schedulers alike.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

SATURATED = 0.90


@dataclass(frozen=True)
class Quality:
    nodes_over_target: int
    """Nodes whose CPU utilisation ends above the target (some may have started there)."""
    pods_on_hot_nodes: int
    """Placed pods on nodes that end above the target: what TargetLoadPacking avoids."""
    saturated_nodes: int
    """Nodes above 90 % CPU: where a VM's guest starves (the overcommit risk LowRiskOverCommitment avoids)."""
    cpu_stdev: float
    """Spread of CPU utilisation across nodes, in percentage points (LoadVariationRiskBalancing evens it)."""
    max_cpu: float
    nodes_in_use: int
    """Nodes that received at least one of the placed pods."""
    overcommitted_nodes: int = 0
    """Nodes whose pods' CPU limits add up to more than the node can give (LowRiskOverCommitment's risk)."""

    def values(self) -> dict[str, float]:
        """The measures by name, at the precision they are shown with."""
        return {
            "nodes over target": self.nodes_over_target,
            "VMs on nodes over target": self.pods_on_hot_nodes,
            "nodes above 90 %": self.saturated_nodes,
            "CPU stdev (pp)": round(self.cpu_stdev, 1),
            "max CPU": round(self.max_cpu),
            "nodes in use": self.nodes_in_use,
            "nodes with CPU limits > capacity": self.overcommitted_nodes,
        }

    def as_row(self) -> dict[str, str]:
        """The measures by name, as table cells."""
        return {key: _FORMATS.get(key, "{}").format(value) for key, value in self.values().items()}


_FORMATS = {"CPU stdev (pp)": "{:.1f}", "max CPU": "{:.0f} %"}


def measure(
    cpu: Mapping[str, float],
    placements: Mapping[str, str],
    target: int,
    limits_ratio: Mapping[str, float] | None = None,
) -> Quality:
    """`cpu`: node -> utilisation ratio at the end; `placements`: pod -> node;
    `limits_ratio`: node -> sum of its pods' CPU limits / its allocatable CPU."""
    percents = [value * 100 for value in cpu.values()]
    used = Counter(placements.values())
    hot = {node for node, value in cpu.items() if value * 100 > target}
    return Quality(
        nodes_over_target=len(hot),
        pods_on_hot_nodes=sum(count for node, count in used.items() if node in hot),
        saturated_nodes=sum(value > SATURATED * 100 for value in percents),
        cpu_stdev=statistics.pstdev(percents) if percents else 0.0,
        max_cpu=max(percents, default=0.0),
        nodes_in_use=len(used),
        overcommitted_nodes=sum(ratio > 1.0 for ratio in (limits_ratio or {}).values()),
    )
