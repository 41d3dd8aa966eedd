"""NodeResourceTopologyMatchArgs (scheduler-plugins v0.34.7, kubescheduler.config.k8s.io/v1).

Names, defaults and validation as upstream's SetDefaults_NodeResourceTopologyMatchArgs and
ValidateNodeResourceTopologyMatchArgs: no ``scoringStrategy`` means LeastAllocated over cpu
and memory; a ``scoringStrategy`` without ``type`` is refused (upstream's "invalid
ScoringStrategyType"); empty ``resources`` mean cpu and memory; a weight of 0 means 1
(and, as upstream scores, any weight below 1 counts as 1). Every ``cache`` setting is
implemented; its enum values are checked here so a typo is an error, not a fallback.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from secondary_scheduler.config.base import ConfigModel

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
BALANCED_ALLOCATION = "BalancedAllocation"
LEAST_NUMA_NODES = "LeastNUMANodes"

SCORING_STRATEGY_TYPES = (MOST_ALLOCATED, BALANCED_ALLOCATION, LEAST_ALLOCATED, LEAST_NUMA_NODES)


class WeightedResource(ConfigModel):
    """A resource and its weight (kube-scheduler's ResourceSpec); weight 0 or unset means 1."""

    name: str
    weight: int = 0

    @field_validator("weight")
    @classmethod
    def _zero_means_one(cls, value: int) -> int:
        return value or 1


def _default_resources() -> list[WeightedResource]:
    return [WeightedResource(name="cpu", weight=1), WeightedResource(name="memory", weight=1)]


class NRTScoringStrategy(ConfigModel):
    type: str = Field("", validate_default=True)
    resources: list[WeightedResource] = Field(default_factory=list, validate_default=True)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in SCORING_STRATEGY_TYPES:
            raise ValueError(
                f"invalid ScoringStrategyType {value!r}: use one of {', '.join(SCORING_STRATEGY_TYPES)}"
            )
        return value

    @field_validator("resources")
    @classmethod
    def _default_if_empty(cls, value: list[WeightedResource]) -> list[WeightedResource]:
        return value or _default_resources()


def _default_strategy() -> NRTScoringStrategy:
    return NRTScoringStrategy(type=LEAST_ALLOCATED, resources=_default_resources())


class NodeResourceTopologyCache(ConfigModel):
    """How the overreserve cache (cacheResyncPeriodSeconds > 0) follows pods and resyncs."""

    foreign_pods_detect: Literal["None", "All", "OnlyExclusiveResources"] = "All"
    resync_method: Literal["Autodetect", "All", "OnlyExclusiveResources"] = "Autodetect"
    informer_mode: Literal["Shared", "Dedicated"] = "Dedicated"
    resync_scope: Literal["All", "OnlyResources"] = "All"


class NodeResourceTopologyMatchArgs(ConfigModel):
    scoring_strategy: NRTScoringStrategy = Field(default_factory=_default_strategy)
    cache_resync_period_seconds: int = 0
    """> 0: the overreserve cache, resynced this often; otherwise the objects as they are."""
    discard_reserved_nodes: bool = False
    """Distrust a node while a pod is reserved there; takes precedence over the resync period."""
    cache: NodeResourceTopologyCache = Field(default_factory=NodeResourceTopologyCache)

    @property
    def weights(self) -> dict[str, int]:
        return {resource.name: resource.weight for resource in self.scoring_strategy.resources}
