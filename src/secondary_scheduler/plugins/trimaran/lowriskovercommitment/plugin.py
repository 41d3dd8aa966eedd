"""LowRiskOverCommitment as a framework PreScore and Score plugin over the NodeTable."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, PreScorePlugin, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import CPU_COLUMN, MEMORY_COLUMN
from secondary_scheduler.framework.status import SUCCESS, Status
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.loadriskcache import LoadRiskCache
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.nodetotals import (
    LIMIT_CPU,
    LIMIT_MEMORY,
    REQUEST_CPU,
    REQUEST_MEMORY,
    NodeTotals,
)
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.scoring import (
    NodeArrays,
    PodResources,
    ResourceArrays,
    prescore,
    score_nodes,
)
from secondary_scheduler.plugins.trimaran.pluginbase import TrimaranPlugin

_STATE_KEY = "LowRiskOverCommitment/pod"


class LowRiskOverCommitment(TrimaranPlugin, PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "LowRiskOverCommitment"
    args_model = LowRiskOverCommitmentArgs

    def __init__(self, args: LowRiskOverCommitmentArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        self._totals = NodeTotals()
        self._risks = LoadRiskCache(args)

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        state.write(_STATE_KEY, prescore(pod.obj))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        resources = state.read(_STATE_KEY, PodResources) or prescore(pod.obj)
        usage = self.usage(table, nodes)
        # Estimating a node's load as its requests makes its load risk 0 (usage never exceeds what is
        # requested), so a node without metrics is scored on its limit risk alone.
        estimated = ~usage.has_metrics if usage.estimate is not None else np.zeros(len(nodes), dtype=np.bool_)
        has_metrics = usage.has_metrics | estimated
        totals = self._totals.of(table, nodes)
        arrays = NodeArrays(
            has_metrics=has_metrics,
            cpu=ResourceArrays(
                capacity=table.allocatable[nodes, CPU_COLUMN],
                requests=totals[:, REQUEST_CPU],
                limits=totals[:, LIMIT_CPU],
                usage=usage.cpu,
            ),
            memory=ResourceArrays(
                capacity=table.allocatable[nodes, MEMORY_COLUMN],
                requests=totals[:, REQUEST_MEMORY],
                limits=totals[:, LIMIT_MEMORY],
                usage=usage.memory,
            ),
        )
        risks = None if resources.best_effort else self._risks.risks(table, nodes, arrays)
        scores = score_nodes(arrays, resources, self.args, risks)
        note = usage.note(self.name, table, nodes, {"cpu": estimated, "memory": estimated}, ~has_metrics)
        self.remember(state, note)
        return scores
