"""Plugin name -> plugin class: what a profile's plugin names resolve to.

Three sources, merged into one registry: the plugins this package ships (``IN_TREE``),
plugins installed as Python packages that declare an entry point in the group
``secondary_scheduler.plugins``, and plugins named on the command line (``--plugin
module:Class``). A plugin class is the single statement of a plugin: its ``name``, its
``args_model`` and (from its bases) its extension points; the config loader's catalog is
computed from the registry (``catalog_of``), so an installed plugin's args are validated
like ours.

There is no process-wide registry: each command builds one with ``load_registry`` (the
``--plugin`` option does it: ``cli.plugin_option``) and hands it down, the catalog to the
config loader and the registry to the framework, as kube-scheduler's ``app.WithPlugin``.

An installed package whose entry point cannot be used (it fails to import, or its class is
not a usable plugin) does not stop every command: its name resolves to a stand-in that fails,
naming the package, only where a profile enables it (building the profile's framework, and
``config validate`` through ``broken_plugins_enabled``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.plugin_catalog import PluginCatalog, PluginSpec
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from secondary_scheduler.plugins.coscheduling.plugin import Coscheduling
from secondary_scheduler.plugins.defaultbinder.default_binder import DefaultBinder
from secondary_scheduler.plugins.defaultpreemption.plugin import DefaultPreemption
from secondary_scheduler.plugins.dynamicresources.dynamic_resources import DynamicResources
from secondary_scheduler.plugins.imagelocality.image_locality import ImageLocality
from secondary_scheduler.plugins.interpodaffinity.plugin import InterPodAffinity
from secondary_scheduler.plugins.loadawarepacking.plugin import LoadAwarePacking
from secondary_scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity
from secondary_scheduler.plugins.nodename.node_name import NodeName
from secondary_scheduler.plugins.nodeports.node_ports import NodePorts
from secondary_scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from secondary_scheduler.plugins.noderesources.fit import Fit
from secondary_scheduler.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch
from secondary_scheduler.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from secondary_scheduler.plugins.nodevolumelimits.csi import NodeVolumeLimits
from secondary_scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from secondary_scheduler.plugins.prioritysort.priority_sort import PrioritySort
from secondary_scheduler.plugins.schedulinggates.scheduling_gates import SchedulingGates
from secondary_scheduler.plugins.tainttoleration.taint_toleration import TaintToleration
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.plugin import LoadVariationRiskBalancing
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.plugin import LowRiskOverCommitment
from secondary_scheduler.plugins.trimaran.targetloadpacking.plugin import TargetLoadPacking
from secondary_scheduler.plugins.volumebinding.volume_binding import VolumeBinding
from secondary_scheduler.plugins.volumerestrictions.volume_restrictions import VolumeRestrictions
from secondary_scheduler.plugins.volumezone.volume_zone import VolumeZone

Registry = dict[str, type[Plugin]]

ENTRY_POINT_GROUP = "secondary_scheduler.plugins"

IN_TREE: tuple[type[Plugin], ...] = (
    PrioritySort,
    SchedulingGates,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    Fit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    BalancedAllocation,
    ImageLocality,
    PodTopologySpread,
    InterPodAffinity,
    DynamicResources,
    DefaultPreemption,
    DefaultBinder,
    TargetLoadPacking,
    LoadVariationRiskBalancing,
    LowRiskOverCommitment,
    LoadAwarePacking,
    Coscheduling,
    NodeResourceTopologyMatch,
)
"""kube-scheduler's plugins we implement, and scheduler-plugins' we ship (Trimaran)."""


class PluginLoadError(Exception):
    """A plugin that cannot be used: the message names where it came from and the fix."""


REQUIRED_METHODS: dict[type[Plugin], tuple[str, ...]] = {
    QueueSortPlugin: ("less",),
    PreEnqueuePlugin: ("pre_enqueue",),
    PreFilterPlugin: ("pre_filter",),
    FilterPlugin: ("filter",),
    PostFilterPlugin: ("post_filter",),
    PreScorePlugin: ("pre_score",),
    ScorePlugin: ("score",),
    ReservePlugin: ("reserve", "unreserve"),
    PermitPlugin: ("permit",),
    PreBindPlugin: ("pre_bind",),
    BindPlugin: ("bind",),
    PostBindPlugin: ("post_bind",),
}
"""What each extension-point base leaves to the plugin (its own raises NotImplementedError)."""


class BrokenPlugin(Plugin):
    """Stand-in for an installed plugin that cannot be used: building it raises why."""

    load_error: ClassVar[str] = ""

    def __init__(self, args: Any, handle: Handle) -> None:
        raise PluginLoadError(self.load_error)


def _stand_in(name: str, error: PluginLoadError) -> type[Plugin]:
    """A plugin called ``name`` that may be enabled at any point but queueSort (its real points
    are unknown: it could not be imported) and fails, with ``error``, when a profile builds it."""
    bases = tuple(base for base in REQUIRED_METHODS if base is not QueueSortPlugin)
    return type(f"Broken{name}", (BrokenPlugin, *bases), {"name": name, "load_error": str(error)})


def unimplemented_methods(plugin: type[Plugin]) -> list[str]:
    """The methods an extension-point base of ``plugin`` requires that it does not define."""
    return [
        f"{method}() of {base.__name__}"
        for base, methods in REQUIRED_METHODS.items()
        if issubclass(plugin, base)
        for method in methods
        if getattr(plugin, method) is getattr(base, method)
    ]


def in_tree_registry() -> Registry:
    return {plugin.name: plugin for plugin in IN_TREE}


def check_plugin(candidate: object, origin: str) -> type[Plugin]:
    """``candidate`` as a plugin class, or PluginLoadError saying what is wrong with it and where."""
    if not (isinstance(candidate, type) and issubclass(candidate, Plugin)):
        raise PluginLoadError(
            f"{origin}: {candidate!r} is not a plugin class: subclass the extension-point bases "
            "of secondary_scheduler.pluginapi (e.g. ScorePlugin)"
        )
    name = getattr(candidate, "name", None)
    if not isinstance(name, str) or not name:
        raise PluginLoadError(f"{origin}: {candidate.__name__} has no name: set the class attribute `name`")
    if not candidate.extension_points():
        raise PluginLoadError(
            f"{origin}: {name} implements no extension point: subclass at least one of "
            "pluginapi's *Plugin bases (FilterPlugin, ScorePlugin, ...)"
        )
    missing = unimplemented_methods(candidate)
    if missing:
        raise PluginLoadError(
            f"{origin}: {name} does not define {', '.join(missing)}: define it, or drop that base "
            "if the plugin does not run at that extension point"
        )
    model = candidate.args_model
    if model is not None and not (isinstance(model, type) and issubclass(model, ConfigModel)):
        raise PluginLoadError(
            f"{origin}: {name}.args_model must be a pydantic model class "
            f"(subclass pluginapi.PluginArgs), not {model!r}"
        )
    return candidate


def load_plugin_path(path: str) -> type[Plugin]:
    """The plugin class named ``module:Class`` (the ``--plugin`` flag)."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise PluginLoadError(f"--plugin={path}: expected module:Class, e.g. mycompany.plugins:GpuScore")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise PluginLoadError(
            f"--plugin={path}: cannot import {module_name}: {error}: install the package that provides "
            "it, or put its directory on PYTHONPATH"
        ) from error
    try:
        candidate = getattr(module, attribute)
    except AttributeError as error:
        raise PluginLoadError(
            f"--plugin={path}: module {module_name} has no {attribute}: check the class name"
        ) from error
    return check_plugin(candidate, f"--plugin={path}")


def _package(entry: EntryPoint) -> str:
    return entry.dist.name if entry.dist is not None else "an unknown package"


def _entry_point_origin(entry: EntryPoint) -> str:
    """How errors name an installed plugin: by the package to fix or uninstall, not only its module."""
    return f"plugin {entry.name!r} of package {_package(entry)} (entry point {entry.value})"


def _load_entry_point(entry: EntryPoint) -> type[Plugin]:
    package = _package(entry)
    origin = _entry_point_origin(entry)
    try:
        candidate = entry.load()
    except Exception as error:
        raise PluginLoadError(
            f"{origin}: cannot import it: {error}; reinstall the package or uninstall it "
            f"(pip uninstall {package})"
        ) from error
    plugin = check_plugin(candidate, origin)
    if plugin.name != entry.name:
        raise PluginLoadError(
            f"{origin}: the entry point is named {entry.name!r} but the class says {plugin.name!r}: "
            "make them the same"
        )
    return plugin


def merge(registry: Registry, plugins: Iterable[type[Plugin]], origin: str) -> Registry:
    """Add ``plugins``; a name that is already taken is an error naming both."""
    for plugin in plugins:
        taken = registry.get(plugin.name)
        if taken is not None and taken is not plugin:
            raise PluginLoadError(
                f"{origin}: plugin name {plugin.name!r} is taken by {taken.__module__}.{taken.__qualname__}: "
                "rename one of them"
            )
        registry[plugin.name] = plugin
    return registry


def load_registry(plugin_paths: Iterable[str] = ()) -> Registry:
    """Every plugin a command can run: in-tree, installed entry points, then ``plugin_paths``
    (``--plugin``). Each command calls it once, at start, and hands the result down."""
    registry = in_tree_registry()
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda entry: entry.name):
        try:
            plugin = _load_entry_point(entry)
        except PluginLoadError as error:  # fails only the profiles that enable it
            plugin = _stand_in(entry.name, error)
        merge(registry, [plugin], _entry_point_origin(entry))
    for path in plugin_paths:
        merge(registry, [load_plugin_path(path)], f"--plugin={path}")
    return registry


def broken_plugins_enabled(
    registry: Mapping[str, type[Plugin]], enabled: Iterable[tuple[str, str]]
) -> list[str]:
    """Why each (profile, plugin) of ``enabled`` whose plugin is a broken installed one cannot run."""
    problems = []
    for profile, name in enabled:
        plugin = registry.get(name)
        if isinstance(plugin, type) and issubclass(plugin, BrokenPlugin):
            problems.append(f"profile {profile!r} enables {plugin.load_error}")
    return problems


def catalog_of(registry: Mapping[str, type[Plugin]]) -> PluginCatalog:
    """What the config loader needs to know of each plugin in ``registry``, read from its class."""
    return PluginCatalog(
        PluginSpec(name, plugin.extension_points(), plugin.args_model, plugin.enabled_warning)
        for name, plugin in registry.items()
    )
