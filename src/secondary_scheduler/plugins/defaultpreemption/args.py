"""``DefaultPreemptionArgs``: how many nodes preemption dry-runs, with kube-scheduler's defaults.

Preemption stops looking once it has a candidate node that violates no PodDisruptionBudget
and at least ``max(numNodes * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)``
candidates in all (never more than the nodes where preemption might help): enough choice
for a good pick without dry-running every node of a large cluster. Defaults and validation
as pkg/scheduler/apis/config/v1/defaults.go and validation_pluginargs.go.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from secondary_scheduler.config.base import ConfigModel


class DefaultPreemptionArgs(ConfigModel):
    min_candidate_nodes_percentage: int = Field(10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(100, ge=0)

    @model_validator(mode="after")
    def _not_both_zero(self) -> DefaultPreemptionArgs:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero: "
                "preemption would have no candidate node to choose from"
            )
        return self

    def num_candidates(self, num_nodes: int) -> int:
        """How many candidate nodes the dry run looks for among ``num_nodes`` (calculateNumCandidates)."""
        wanted = num_nodes * self.min_candidate_nodes_percentage // 100
        return min(max(wanted, self.min_candidate_nodes_absolute), num_nodes)
