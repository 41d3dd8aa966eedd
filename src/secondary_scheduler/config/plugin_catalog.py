"""The single table of plugins this scheduler ships: extension points and args model of each.

Everything that needs to know "is X a plugin, where can it run, what args does it take"
reads it here: the loader (to validate and merge), the dump, and the scheduler framework
(to instantiate). Adding a plugin means adding a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.config.plugin_args import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
)
from secondary_scheduler.config.trimaran_args import (
    LoadVariationRiskBalancingArgs,
    LowRiskOverCommitmentArgs,
    TargetLoadPackingArgs,
)

_P = ExtensionPoint


@dataclass(frozen=True)
class PluginSpec:
    name: str
    extension_points: frozenset[ExtensionPoint]
    args_model: type[ConfigModel] | None = None


def _plugin(name: str, *points: ExtensionPoint, args: type[ConfigModel] | None = None) -> PluginSpec:
    return PluginSpec(name, frozenset(points), args)


CATALOG: Final[Mapping[str, PluginSpec]] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            _plugin("PrioritySort", _P.QUEUE_SORT),
            _plugin("SchedulingGates", _P.PRE_ENQUEUE),
            _plugin("NodeUnschedulable", _P.FILTER),
            _plugin("NodeName", _P.FILTER),
            _plugin("TaintToleration", _P.FILTER, _P.PRE_SCORE, _P.SCORE),
            _plugin("NodeAffinity", _P.PRE_FILTER, _P.FILTER, _P.PRE_SCORE, _P.SCORE, args=NodeAffinityArgs),
            _plugin("NodePorts", _P.PRE_FILTER, _P.FILTER),
            _plugin(
                "NodeResourcesFit",
                _P.PRE_FILTER,
                _P.FILTER,
                _P.PRE_SCORE,
                _P.SCORE,
                args=NodeResourcesFitArgs,
            ),
            _plugin(
                "NodeResourcesBalancedAllocation",
                _P.PRE_SCORE,
                _P.SCORE,
                args=NodeResourcesBalancedAllocationArgs,
            ),
            _plugin("ImageLocality", _P.SCORE),
            _plugin(
                "PodTopologySpread",
                _P.PRE_FILTER,
                _P.FILTER,
                _P.PRE_SCORE,
                _P.SCORE,
                args=PodTopologySpreadArgs,
            ),
            _plugin(
                "InterPodAffinity",
                _P.PRE_FILTER,
                _P.FILTER,
                _P.PRE_SCORE,
                _P.SCORE,
                args=InterPodAffinityArgs,
            ),
            _plugin("DefaultPreemption", _P.POST_FILTER, args=DefaultPreemptionArgs),
            _plugin("DefaultBinder", _P.BIND),
            _plugin("TargetLoadPacking", _P.SCORE, args=TargetLoadPackingArgs),
            _plugin("LoadVariationRiskBalancing", _P.SCORE, args=LoadVariationRiskBalancingArgs),
            _plugin("LowRiskOverCommitment", _P.PRE_SCORE, _P.SCORE, args=LowRiskOverCommitmentArgs),
        )
    }
)

DEFAULT_MULTI_POINT: Final[tuple[tuple[str, int | None], ...]] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)
"""kube-scheduler 1.34's default multiPoint plugins (name, score weight), in its order,
restricted to the plugins we ship (its volume plugins and DynamicResources are not).
DefaultPreemption is there for its FailedScheduling message; it never evicts."""


def shipped_plugins() -> str:
    """The names, for messages that must say what is available."""
    return ", ".join(CATALOG)
