"""v1beta1's resource-scoring plugins, folded into NodeResourcesFit the way v1beta2 did.

NodeResourcesLeastAllocated, NodeResourcesMostAllocated and RequestedToCapacityRatio were
score plugins of their own until v1beta2 made them NodeResourcesFit's `scoringStrategy`.
Configs still name them (one of our seeds disables NodeResourcesLeastAllocated in a v1beta3
file), so: disabling one has no effect (NodeResourcesFit keeps scoring) and says so;
enabling one enables NodeResourcesFit's score with that strategy and says how to write it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pydantic import Field

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.errors import Findings, YamlPath, format_path
from secondary_scheduler.config.scoring import ResourceSpec, Shape

STRATEGY_OF: Final = {
    "NodeResourcesLeastAllocated": "LeastAllocated",
    "NodeResourcesMostAllocated": "MostAllocated",
    "RequestedToCapacityRatio": "RequestedToCapacityRatio",
}


class LegacyResourcesArgs(ConfigModel):
    """Args of v1beta1's NodeResourcesLeastAllocated and NodeResourcesMostAllocated."""

    resources: list[ResourceSpec] = Field(default_factory=list)


class LegacyRequestedToCapacityRatioArgs(LegacyResourcesArgs):
    shape: Shape = Field(default_factory=list)


def args_model(name: str) -> type[LegacyResourcesArgs]:
    return LegacyRequestedToCapacityRatioArgs if name == "RequestedToCapacityRatio" else LegacyResourcesArgs


def disabled_note(name: str) -> str:
    return (
        f"{name} has no effect here: v1beta2 merged it into NodeResourcesFit, which keeps scoring "
        f"with its scoringStrategy (LeastAllocated unless configured). To change the strategy set "
        f"NodeResourcesFit's args.scoringStrategy.type; to stop resource scoring disable "
        f"NodeResourcesFit under score"
    )


def enabled_note(name: str) -> str:
    return (
        f"{name} was merged into NodeResourcesFit in v1beta2: enabling NodeResourcesFit under score with "
        f"scoringStrategy.type {STRATEGY_OF[name]} instead. Write it that way to silence this warning"
    )


@dataclass(frozen=True)
class LegacyScoring:
    """A legacy score plugin a profile enables, and where."""

    name: str
    path: YamlPath

    def fit_args(
        self,
        fit_args: dict[str, Any],
        legacy_args: LegacyResourcesArgs | None,
        fit_args_path: YamlPath,
        findings: Findings,
    ) -> dict[str, Any]:
        """NodeResourcesFit's raw args with this plugin's strategy (and its args) written in."""
        strategy = STRATEGY_OF[self.name]
        scoring = dict(fit_args.get("scoringStrategy") or {})
        if scoring.get("type") not in (None, strategy):
            findings.error(
                (*fit_args_path, "scoringStrategy", "type"),
                f"conflicts with {self.name} enabled at {format_path(self.path)}, which means type "
                f"{strategy}: keep only one of the two",
            )
            return fit_args
        scoring["type"] = strategy
        if legacy_args is not None and legacy_args.resources and "resources" not in scoring:
            scoring["resources"] = [resource.model_dump(mode="json") for resource in legacy_args.resources]
        ratio = dict(scoring.get("requestedToCapacityRatio") or {})
        if isinstance(legacy_args, LegacyRequestedToCapacityRatioArgs) and legacy_args.shape:
            ratio.setdefault("shape", [point.model_dump(mode="json") for point in legacy_args.shape])
            scoring["requestedToCapacityRatio"] = ratio
        if strategy == "RequestedToCapacityRatio" and not ratio.get("shape"):
            findings.error(
                (*self.path, "name"),
                f"{self.name} needs a shape: add a pluginConfig entry for {self.name} with args.shape "
                "(e.g. [{utilization: 0, score: 0}, {utilization: 100, score: 10}])",
            )
            return fit_args
        return {**fit_args, "scoringStrategy": scoring}
