"""LoadVariationRiskBalancing as a framework Score plugin over the NodeTable."""

from __future__ import annotations

from typing import ClassVar

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import CPU_COLUMN, MEMORY_COLUMN
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.scoring import NodeArrays, score_nodes
from secondary_scheduler.plugins.trimaran.pluginbase import TrimaranPlugin
from secondary_scheduler.plugins.trimaran.resourcestats import pod_requests


class LoadVariationRiskBalancing(TrimaranPlugin, ScorePlugin):
    name: ClassVar[str] = "LoadVariationRiskBalancing"
    args_model = LoadVariationRiskBalancingArgs

    def __init__(self, args: LoadVariationRiskBalancingArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        usage = self.usage(table, nodes)
        cpu, cpu_estimated = usage.filled("cpu")
        memory, memory_estimated = usage.filled("memory")
        arrays = NodeArrays(
            cpu_capacity=table.allocatable[nodes, CPU_COLUMN],
            memory_capacity=table.allocatable[nodes, MEMORY_COLUMN],
            cpu=cpu,
            memory=memory,
        )
        scores = score_nodes(arrays, pod_requests(pod.obj), self.args)
        unmeasured = ~(cpu.valid | memory.valid)
        self.remember(
            state,
            usage.note(
                self.name, table, nodes, {"cpu": cpu_estimated, "memory": memory_estimated}, unmeasured
            ),
        )
        return scores
