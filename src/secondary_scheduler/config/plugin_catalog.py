"""What the config loader knows of each plugin: its extension points and args model.

The loader is handed a `PluginCatalog`; it imports no plugin. Each command builds the
catalog once and passes it down, as kube-scheduler injects its registry (`app.WithPlugin`):
the scheduler, `config validate` and `score` from their plugin registry
(`plugins.registry.catalog_of`: in-tree, installed entry points, `--plugin`), so a plugin
from a package is validated, merged and suggested exactly like the ones this package
ships; the operator from `plugins.catalog.IN_TREE_CATALOG`, which names the plugins our
scheduler image ships without importing their code.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.config.suggest import FieldIndex, field_index


@dataclass(frozen=True)
class PluginSpec:
    name: str
    extension_points: frozenset[ExtensionPoint]
    args_model: type[ConfigModel] | None = None
    enabled_warning: str | None = None
    """A limitation to report when a profile enables the plugin by name."""


class PluginCatalog(Mapping[str, PluginSpec]):
    """Name -> PluginSpec of every plugin a command can run (a value: built once, never changed)."""

    def __init__(self, specs: Iterable[PluginSpec]) -> None:
        self._specs = {spec.name: spec for spec in specs}
        self.fields: FieldIndex = field_index(
            spec.args_model for spec in self._specs.values() if spec.args_model is not None
        )
        """Every field path a configuration for these plugins may hold ("did you mean" looks there)."""

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"PluginCatalog({', '.join(self._specs)})"

    def names(self) -> str:
        """The names, for messages that must say what is available."""
        return ", ".join(self._specs)


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
(pkg/scheduler/apis/config/v1/default_plugins.go)."""
