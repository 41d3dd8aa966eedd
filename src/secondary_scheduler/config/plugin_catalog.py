"""What the config loader knows of each plugin: its extension points and args model.

It is computed from the plugin registry (``plugins.registry.default_registry``) on first
use, so a plugin installed as a package, or named with ``--plugin``, is validated, merged
and suggested exactly like the ones this package ships: the plugin class is the only
place a plugin is described.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.model import ExtensionPoint


@dataclass(frozen=True)
class PluginSpec:
    name: str
    extension_points: frozenset[ExtensionPoint]
    args_model: type[ConfigModel] | None = None
    enabled_warning: str | None = None
    """A limitation to report when a profile enables the plugin by name."""


class _Catalog(Mapping[str, PluginSpec]):
    """Name -> PluginSpec of every registered plugin, read from the registry when first asked."""

    def __init__(self) -> None:
        self._source: object = None
        self._cached: Mapping[str, PluginSpec] = {}

    def _specs(self) -> Mapping[str, PluginSpec]:
        # Imported here: the registry imports the plugins, which import this package's models.
        from secondary_scheduler.plugins.registry import default_registry

        registry = default_registry()
        if registry is not self._source:
            self._cached = {
                name: PluginSpec(name, plugin.extension_points(), plugin.args_model, plugin.enabled_warning)
                for name, plugin in registry.items()
            }
            self._source = registry
        return self._cached

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs())

    def __len__(self) -> int:
        return len(self._specs())


CATALOG: Final[Mapping[str, PluginSpec]] = _Catalog()

DEFAULT_MULTI_POINT: Final[tuple[tuple[str, int | None], ...]] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)
"""kube-scheduler 1.34's default multiPoint plugins (name, score weight), in its order
(pkg/scheduler/apis/config/v1/default_plugins.go). DynamicResources refuses pods with
resourceClaims (allocation is not implemented)."""


def shipped_plugins() -> str:
    """The names, for messages that must say what is available."""
    return ", ".join(CATALOG)
