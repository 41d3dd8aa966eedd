"""The in-tree plugins as the config loader sees them, without their code.

Name, extension points, args model and warning of every plugin this package ships, read
from the plugins' ``args.py`` modules only: no framework, no numpy, no plugin code is
imported. This is the catalog of our scheduler image, which `secsched operator` checks a
ConfigMap against, as kube-scheduler's apis/config knows its plugins' names and args types
apart from the plugins. Commands that run plugins use ``registry.catalog_of(registry)``
instead, which also covers installed and ``--plugin`` plugins;
tests/unit/plugins/test_plugin_catalog.py checks every entry here against its plugin class.
"""

from __future__ import annotations

from typing import Final

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.config.plugin_catalog import PluginCatalog, PluginSpec
from secondary_scheduler.plugins.coscheduling.args import CoschedulingArgs
from secondary_scheduler.plugins.defaultpreemption.args import DefaultPreemptionArgs
from secondary_scheduler.plugins.dynamicresources.limitation import ENABLED_WARNING as DRA_WARNING
from secondary_scheduler.plugins.interpodaffinity.args import InterPodAffinityArgs
from secondary_scheduler.plugins.loadawarepacking.args import LoadAwarePackingArgs
from secondary_scheduler.plugins.nodeaffinity.args import NodeAffinityArgs
from secondary_scheduler.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from secondary_scheduler.plugins.noderesourcetopology.args import NodeResourceTopologyMatchArgs
from secondary_scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs
from secondary_scheduler.plugins.volumebinding.args import VolumeBindingArgs


def _spec(
    name: str, points: str, args: type[ConfigModel] | None = None, warning: str | None = None
) -> PluginSpec:
    """``points``: the extension points as a profile's ``plugins`` keys name them."""
    return PluginSpec(name, frozenset(ExtensionPoint(point) for point in points.split()), args, warning)


IN_TREE_CATALOG: Final = PluginCatalog(
    [
        _spec("PrioritySort", "queueSort"),
        _spec("SchedulingGates", "preEnqueue"),
        _spec("NodeUnschedulable", "filter"),
        _spec("NodeName", "filter"),
        _spec("TaintToleration", "filter preScore score"),
        _spec("NodeAffinity", "preFilter filter preScore score", NodeAffinityArgs),
        _spec("NodePorts", "preFilter filter"),
        _spec("NodeResourcesFit", "preFilter filter preScore score", NodeResourcesFitArgs),
        _spec("VolumeRestrictions", "preFilter filter"),
        _spec("NodeVolumeLimits", "preFilter filter"),
        _spec("VolumeBinding", "preFilter filter preScore score reserve preBind", VolumeBindingArgs),
        _spec("VolumeZone", "preFilter filter"),
        _spec("NodeResourcesBalancedAllocation", "preScore score", NodeResourcesBalancedAllocationArgs),
        _spec("ImageLocality", "score"),
        _spec("PodTopologySpread", "preFilter filter preScore score", PodTopologySpreadArgs),
        _spec("InterPodAffinity", "preFilter filter preScore score", InterPodAffinityArgs),
        _spec(
            "DynamicResources", "preEnqueue preFilter filter postFilter reserve preBind", warning=DRA_WARNING
        ),
        _spec("DefaultPreemption", "preEnqueue postFilter", DefaultPreemptionArgs),
        _spec("DefaultBinder", "bind"),
        _spec("TargetLoadPacking", "score", TargetLoadPackingArgs),
        _spec("LoadVariationRiskBalancing", "score", LoadVariationRiskBalancingArgs),
        _spec("LowRiskOverCommitment", "preScore score", LowRiskOverCommitmentArgs),
        _spec("LoadAwarePacking", "filter score", LoadAwarePackingArgs),
        _spec("Coscheduling", "queueSort preFilter postFilter reserve permit", CoschedulingArgs),
        _spec("NodeResourceTopologyMatch", "filter score reserve postBind", NodeResourceTopologyMatchArgs),
    ]
)
"""In ``registry.IN_TREE``'s order, so messages list the plugins as the scheduler does."""
