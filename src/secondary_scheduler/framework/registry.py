"""Plugin name -> plugin class: what a profile's plugin names resolve to.

``in_tree_registry()`` holds kube-scheduler's plugins that this scheduler implements.
Out-of-tree plugins (Trimaran) come as another such mapping, merged in one call:

    registry = build_registry(TRIMARAN_PLUGINS)

``default_registry()`` is that: what the scheduler (and ``secsched score``) runs with.
"""

from __future__ import annotations

from collections.abc import Mapping

from secondary_scheduler.framework.interface import Plugin
from secondary_scheduler.framework.preemption import DefaultPreemption
from secondary_scheduler.plugins.defaultbinder import DefaultBinder
from secondary_scheduler.plugins.imagelocality import ImageLocality
from secondary_scheduler.plugins.interpodaffinity import InterPodAffinity
from secondary_scheduler.plugins.nodeaffinity import NodeAffinity
from secondary_scheduler.plugins.nodename import NodeName
from secondary_scheduler.plugins.nodeports import NodePorts
from secondary_scheduler.plugins.noderesources import BalancedAllocation, Fit
from secondary_scheduler.plugins.nodeunschedulable import NodeUnschedulable
from secondary_scheduler.plugins.podtopologyspread import PodTopologySpread
from secondary_scheduler.plugins.prioritysort import PrioritySort
from secondary_scheduler.plugins.schedulinggates import SchedulingGates
from secondary_scheduler.plugins.tainttoleration import TaintToleration
from secondary_scheduler.plugins.trimaran.registry import TRIMARAN_PLUGINS

Registry = dict[str, type[Plugin]]

_IN_TREE: tuple[type[Plugin], ...] = (
    PrioritySort,
    SchedulingGates,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    Fit,
    BalancedAllocation,
    ImageLocality,
    PodTopologySpread,
    InterPodAffinity,
    DefaultPreemption,
    DefaultBinder,
)


def in_tree_registry() -> Registry:
    return {plugin.name: plugin for plugin in _IN_TREE}


def build_registry(*out_of_tree: Mapping[str, type[Plugin]]) -> Registry:
    """The in-tree plugins plus the given ones; a name registered twice is an error."""
    registry = in_tree_registry()
    for plugins in out_of_tree:
        for name, plugin in plugins.items():
            if name in registry:
                raise ValueError(f"plugin {name!r} is registered twice")
            registry[name] = plugin
    return registry


def default_registry() -> Registry:
    """Every plugin this scheduler ships: the in-tree ones and the Trimaran load-aware ones."""
    return build_registry(TRIMARAN_PLUGINS)
