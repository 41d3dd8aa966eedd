"""The placement section's measures and its table: pure logic, tested in memory.

One ``Outcome`` per run (a profile on one scheduler): the nodes' load before and after, where
each VM went. The issue-38 targets for LoadAwarePacking are checked here against the anchors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SATURATED_PERCENT = 90.0


@dataclass(frozen=True)
class Outcome:
    """One run's result: CPU ratios (0-1) per node before and after, and VM -> node."""

    profile: str
    scheduler: str
    before: Mapping[str, float]
    after: Mapping[str, float]
    placements: Mapping[str, str]
    seconds: float = 0.0

    def over(self, target: int) -> set[str]:
        return {node for node, cpu in self.after.items() if cpu * 100 > target}

    def measures(self, target: int) -> dict[str, int]:
        """The table's columns (every one better lower, but *nodes in use* is what packing wants low)."""
        hot = self.over(target)
        started_over = {node for node in hot if self.before.get(node, 0.0) * 100 > target}
        used = Counter(self.placements.values())
        return {
            "nodes over target": len(hot),
            "of them over at the start": len(started_over),
            "nodes pushed over target": len(hot - started_over),
            "nodes above 90 %": sum(cpu * 100 > SATURATED_PERCENT for cpu in self.after.values()),
            "VMs on nodes over target": sum(count for node, count in used.items() if node in hot),
            "nodes in use": len(used),
        }


def busy_share(cpu: Mapping[str, float], cores: Mapping[str, float]) -> float:
    """The cluster's CPU use as a share of its capacity: each node's ratio weighted by its cores."""
    total = sum(cores[node] for node in cpu)
    return sum(ratio * cores[node] for node, ratio in cpu.items()) / total if total else 0.0


@dataclass(frozen=True)
class Verdict:
    name: str
    met: bool
    detail: str


def targets(ours: Outcome, anchors: Sequence[Outcome], target: int) -> list[Verdict]:
    """Issue 38's targets for ``ours`` (LoadAwarePacking) against the ``anchors``' runs."""
    mine = ours.measures(target)
    verdicts = [
        Verdict(
            "0 nodes over target",
            mine["nodes over target"] == 0,
            f"{mine['nodes over target']} ({mine['of them over at the start']} already over before any VM, "
            f"{mine['nodes pushed over target']} pushed over)",
        ),
        Verdict(
            "0 nodes pushed over target (a node over it before any VM is not a scheduler's to fix)",
            mine["nodes pushed over target"] == 0,
            str(mine["nodes pushed over target"]),
        ),
        Verdict("0 nodes above 90 %", mine["nodes above 90 %"] == 0, str(mine["nodes above 90 %"])),
    ]
    packing = [run for run in anchors if run.profile == "TargetLoadPacking"]
    if packing:
        fewest = min(run.measures(target)["nodes in use"] for run in packing)
        verdicts.append(
            Verdict(
                "nodes in use ≤ TargetLoadPacking's",
                mine["nodes in use"] <= fewest,
                f"{mine['nodes in use']} vs {fewest} (the fewer of its runs)",
            )
        )
    if anchors:
        best = min(anchors, key=lambda run: run.measures(target)["VMs on nodes over target"])
        best_count = best.measures(target)["VMs on nodes over target"]
        verdicts.append(
            Verdict(
                "VMs on nodes over target ≤ 0.2× the best anchor's",
                mine["VMs on nodes over target"] <= 0.2 * best_count,
                f"{mine['VMs on nodes over target']} vs {best_count} ({best.profile}, {best.scheduler})",
            )
        )
    return verdicts


def agreement(first: Outcome, second: Outcome, target: int) -> str:
    """How alike two runs of one profile are: the share of VMs placed on the same node, and the
    largest difference of a measure."""
    same = sum(first.placements.get(vm) == node for vm, node in second.placements.items())
    share = same / len(second.placements) if second.placements else 1.0
    a, b = first.measures(target), second.measures(target)
    worst = max(a, key=lambda key: abs(a[key] - b[key]))
    return f"{share:.0%} of VMs on the same node; largest difference: {worst} {a[worst]} vs {b[worst]}"


def table(outcomes: Sequence[Outcome], target: int) -> list[list[str]]:
    """Rows: profile, scheduler, then the measures, then the run's wall seconds."""
    rows = []
    for run in outcomes:
        values = run.measures(target)
        rows.append(
            [run.profile, run.scheduler, *(str(value) for value in values.values()), f"{run.seconds:.0f}"]
        )
    return rows


HEADER = [
    "profile",
    "scheduler",
    "nodes over target",
    "of them over at the start",
    "nodes pushed over target",
    "nodes above 90 %",
    "VMs on nodes over target",
    "nodes in use",
    "run s",
]
