"""NodeAffinityArgs (kubescheduler.config.k8s.io/v1): the config's view of a node affinity.

The ``*Spec`` models are what a config file may write (validated as the API server would);
the plugin compiles them into ``framework.nodeselector.NodeSelector`` to match nodes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from secondary_scheduler.config.base import ConfigModel


class NodeSelectorRequirementSpec(ConfigModel):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> NodeSelectorRequirementSpec:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        if self.operator in ("Gt", "Lt") and (
            len(self.values) != 1 or not self.values[0].lstrip("-").isdigit()
        ):
            raise ValueError(f"operator {self.operator} needs exactly one integer value")
        return self


class NodeSelectorTermSpec(ConfigModel):
    match_expressions: list[NodeSelectorRequirementSpec] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirementSpec] = Field(default_factory=list)


class NodeSelectorSpec(ConfigModel):
    node_selector_terms: list[NodeSelectorTermSpec] = Field(min_length=1)


class PreferredSchedulingTermSpec(ConfigModel):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTermSpec


class NodeAffinitySpec(ConfigModel):
    required_during_scheduling_ignored_during_execution: NodeSelectorSpec | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTermSpec] = Field(
        default_factory=list
    )


class NodeAffinityArgs(ConfigModel):
    """`addedAffinity` is ANDed with every pod's own node affinity."""

    added_affinity: NodeAffinitySpec | None = None
