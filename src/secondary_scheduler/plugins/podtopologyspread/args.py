"""PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1), with kube-scheduler 1.34's defaults and rules.

Where v1beta1 defaulted differently (defaultingType), the version comes from the validation context.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from secondary_scheduler.config.base import ConfigModel, api_version
from secondary_scheduler.config.versions import ApiVersion


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
