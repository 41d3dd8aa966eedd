"""What ``schedule_one.schedule_pod`` returns: the chosen node, or why there is none, and the scores."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from secondary_scheduler.framework.aliases import IntArray
from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.status import Status


@dataclass(frozen=True)
class PluginScores:
    """One score plugin's scores of the scored nodes (aligned with ``Explanation.nodes``)."""

    plugin: str
    weight: int
    raw: IntArray
    normalized: IntArray
    skipped: bool = False
    """Its PreScore returned Skip: it scored nothing and adds nothing."""


@dataclass(frozen=True)
class Explanation:
    """Per node and plugin, how the total score came about (the ``score`` command prints this)."""

    nodes: tuple[str, ...]
    plugins: tuple[PluginScores, ...]
    totals: IntArray

    def as_dict(self) -> dict[str, dict[str, object]]:
        """node -> {"total": int, "plugins": {plugin: {"raw", "normalized", "weight", "weighted"}}}."""
        result: dict[str, dict[str, object]] = {}
        for index, node in enumerate(self.nodes):
            plugins: dict[str, Mapping[str, int | bool]] = {
                scores.plugin: {
                    "raw": int(scores.raw[index]),
                    "normalized": int(scores.normalized[index]),
                    "weight": scores.weight,
                    "weighted": int(scores.normalized[index]) * scores.weight,
                    "skipped": scores.skipped,
                }
                for scores in self.plugins
            }
            result[node] = {"total": int(self.totals[index]), "plugins": plugins}
        return result


@dataclass(frozen=True)
class ScheduleResult:
    status: Status
    """Success; Unschedulable with kube-scheduler's FitError text; or Error."""
    node_name: str | None = None
    evaluated_nodes: int = 0
    """Nodes the filters looked at (fewer than all once enough feasible nodes were found)."""
    feasible_nodes: int = 0
    diagnosis: Diagnosis | None = None
    """Why nodes were rejected (on success only when the cycle was asked to explain itself)."""
    explanation: Explanation | None = None
    nominated_node: str | None = None
    """Set when PostFilter (preemption) changed the pod's nomination: the node where it should go
    on its next try, or "" when an earlier nomination was taken back; None when unchanged."""

    @property
    def message(self) -> str:
        return self.status.message
