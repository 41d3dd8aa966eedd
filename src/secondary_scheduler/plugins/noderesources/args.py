"""NodeResourcesFitArgs and NodeResourcesBalancedAllocationArgs (kubescheduler.config.k8s.io/v1),
with kube-scheduler 1.34's defaults and validation rules.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from secondary_scheduler.config.base import ConfigModel, warn
from secondary_scheduler.config.scoring import ResourceSpec, Shape

ScoringStrategyType = Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec.model_validate({"name": "cpu"}), ResourceSpec.model_validate({"name": "memory"})]


def _resources_or_default(resources: list[ResourceSpec]) -> list[ResourceSpec]:
    names = [resource.name for resource in resources]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"resource {', '.join(duplicates)} is listed more than once")
    return resources or _default_resources()


class RequestedToCapacityRatioParam(ConfigModel):
    shape: Shape = Field(default_factory=list)


class ScoringStrategy(ConfigModel):
    type: ScoringStrategyType
    resources: list[ResourceSpec] = Field(default_factory=_default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @field_validator("resources")
    @classmethod
    def _resources(cls, resources: list[ResourceSpec]) -> list[ResourceSpec]:
        return _resources_or_default(resources)

    @model_validator(mode="after")
    def _shape_for_ratio(self) -> ScoringStrategy:
        ratio = self.requested_to_capacity_ratio
        if self.type == "RequestedToCapacityRatio" and (ratio is None or not ratio.shape):
            raise ValueError(
                "type RequestedToCapacityRatio needs requestedToCapacityRatio.shape "
                "(e.g. [{utilization: 0, score: 0}, {utilization: 100, score: 10}])"
            )
        return self


def _least_allocated() -> ScoringStrategy:
    return ScoringStrategy.model_validate({"type": "LeastAllocated"})


class NodeResourcesFitArgs(ConfigModel):
    ignored_resources: list[str] = Field(default_factory=list)
    ignored_resource_groups: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(default_factory=_least_allocated)

    @field_validator("ignored_resource_groups")
    @classmethod
    def _group_names(cls, groups: list[str]) -> list[str]:
        for group in groups:
            if "/" in group:
                raise ValueError(f"{group!r} is a resource name, not a group: put it in ignoredResources")
        return groups

    @model_validator(mode="after")
    def _unused_shape(self, info: ValidationInfo) -> NodeResourcesFitArgs:
        strategy = self.scoring_strategy
        if strategy.type != "RequestedToCapacityRatio" and strategy.requested_to_capacity_ratio is not None:
            warn(
                info,
                ("scoringStrategy", "requestedToCapacityRatio"),
                f"ignored: it only applies to type RequestedToCapacityRatio, not {strategy.type}",
            )
        return self


class NodeResourcesBalancedAllocationArgs(ConfigModel):
    resources: list[ResourceSpec] = Field(default_factory=_default_resources)

    @field_validator("resources")
    @classmethod
    def _weights_are_one(cls, resources: list[ResourceSpec]) -> list[ResourceSpec]:
        for resource in resources:
            if resource.weight != 1:
                raise ValueError(f"weight of {resource.name} must be 1: balanced allocation ignores weights")
        return _resources_or_default(resources)
