"""Args of the in-tree plugins we ship, with kube-scheduler's defaults and validation rules.

Fields and rules follow the v1 API (kubescheduler.config.k8s.io/v1 *Args kinds); where an
older version defaulted differently (PodTopologySpread's defaultingType in v1beta1), the
version comes from the validation context.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from secondary_scheduler.config.base import ConfigModel, api_version, warn
from secondary_scheduler.config.versions import ApiVersion

ScoringStrategyType = Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]


class ResourceSpec(ConfigModel):
    """A resource and its weight in a score; weight 0 (or unset) means 1."""

    name: str = Field(min_length=1)
    weight: int = Field(1, ge=0, le=100)

    @field_validator("weight")
    @classmethod
    def _zero_means_one(cls, value: int) -> int:
        return value or 1


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec.model_validate({"name": "cpu"}), ResourceSpec.model_validate({"name": "memory"})]


def _resources_or_default(resources: list[ResourceSpec]) -> list[ResourceSpec]:
    names = [resource.name for resource in resources]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"resource {', '.join(duplicates)} is listed more than once")
    return resources or _default_resources()


class UtilizationShapePoint(ConfigModel):
    utilization: int = Field(ge=0, le=100)
    score: int = Field(ge=0, le=10)


def check_shape(points: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
    """The scoring function's points must have strictly increasing utilization."""
    for before, after in itertools.pairwise(points):
        if after.utilization <= before.utilization:
            raise ValueError(
                f"utilization must increase from point to point "
                f"({before.utilization} then {after.utilization})"
            )
    return points


class RequestedToCapacityRatioParam(ConfigModel):
    shape: list[UtilizationShapePoint] = Field(default_factory=list)

    @field_validator("shape")
    @classmethod
    def _increasing(cls, points: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        return check_shape(points)


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


class TopologySpreadConstraint(ConfigModel):
    max_skew: int = Field(gt=0)
    topology_key: str = Field(min_length=1)
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: dict[str, Any] | None = None
    min_domains: int | None = Field(None, gt=0)
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: list[str] = Field(default_factory=list)

    @field_validator("label_selector")
    @classmethod
    def _no_selector(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            raise ValueError("default constraints must not set labelSelector: it is derived from each pod")
        return value


class PodTopologySpreadArgs(ConfigModel):
    """`defaultingType` defaults to System; v1beta1 defaulted to List when constraints were given."""

    default_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    defaulting_type: Literal["System", "List"] = "System"

    @model_validator(mode="before")
    @classmethod
    def _version_default(cls, data: Any, info: ValidationInfo) -> Any:
        if (
            isinstance(data, dict)
            and data.get("defaultingType") in (None, "")
            and api_version(info) is ApiVersion.V1BETA1
        ):
            return {**data, "defaultingType": "List" if data.get("defaultConstraints") else "System"}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> PodTopologySpreadArgs:
        if self.defaulting_type == "System" and self.default_constraints:
            raise ValueError(
                "defaultConstraints must be empty when defaultingType is System: "
                "set defaultingType: List to use your own constraints"
            )
        seen: set[tuple[str, str]] = set()
        for constraint in self.default_constraints:
            key = (constraint.topology_key, constraint.when_unsatisfiable)
            if key in seen:
                raise ValueError(f"two default constraints have topologyKey {key[0]!r} and {key[1]}")
            seen.add(key)
        return self


class InterPodAffinityArgs(ConfigModel):
    hard_pod_affinity_weight: int = Field(1, ge=0, le=100)
    ignore_preferred_terms_of_existing_pods: bool = False


class NodeSelectorRequirement(ConfigModel):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> NodeSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        if self.operator in ("Gt", "Lt") and (
            len(self.values) != 1 or not self.values[0].lstrip("-").isdigit()
        ):
            raise ValueError(f"operator {self.operator} needs exactly one integer value")
        return self


class NodeSelectorTerm(ConfigModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(ConfigModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1)


class PreferredSchedulingTerm(ConfigModel):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(ConfigModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class NodeAffinityArgs(ConfigModel):
    """`addedAffinity` is ANDed with every pod's own node affinity."""

    added_affinity: NodeAffinity | None = None
