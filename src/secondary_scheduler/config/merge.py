"""kube-scheduler's plugin merge, step by step, so a profile runs the plugins upstream would.

1. Per plugin set (multiPoint and each extension point): the defaults, minus the disabled
   ones (all of them with "*"), a user entry naming a default replacing it in place (weight
   and all: re-enabling without a weight means weight 1, not the default's), then the other
   user entries appended. Our defaults live in multiPoint only, as in v1.
2. Per extension point: if its own set disables "*", only its own entries run. Otherwise the
   multiPoint plugins that implement the point and are not disabled there are added; a
   plugin also enabled at the point itself keeps that entry instead. Order: those explicit
   overrides, then the multiPoint plugins, then the point's other entries.
3. Score weights: the score set's own entry wins over multiPoint's; 0 or unset means 1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from secondary_scheduler.config.errors import Findings, YamlPath
from secondary_scheduler.config.model import ExtensionPoint, PluginEntry


class Configured(NamedTuple):
    """A plugin as a plugin set lists it; `path` is where the user wrote it (None for defaults)."""

    name: str
    weight: int | None
    path: YamlPath | None = None


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[Configured, ...] = ()
    disabled: frozenset[str] = frozenset()


def merge_set(defaults: Sequence[Configured], user: PluginSet) -> PluginSet:
    """Step 1: the defaults with the user's set applied."""
    last_index = {entry.name: index for index, entry in enumerate(user.enabled)}
    replaced: set[int] = set()
    merged: list[Configured] = []
    if "*" not in user.disabled:
        for default in defaults:
            if default.name in user.disabled:
                continue
            index = last_index.get(default.name)
            if index is None:
                merged.append(default)
            else:
                merged.append(user.enabled[index])
                replaced.add(index)
    merged += [entry for index, entry in enumerate(user.enabled) if index not in replaced]
    return PluginSet(tuple(merged), user.disabled)


def expand(multi_point: PluginSet, own: PluginSet, implements: Callable[[str], bool]) -> list[Configured]:
    """Step 2: the plugins one extension point runs, in order."""
    if "*" in own.disabled:
        return list(own.enabled)
    own_names = {entry.name for entry in own.enabled}
    overridden: set[str] = set()
    from_multi_point: list[Configured] = []
    for entry in multi_point.enabled:
        if not implements(entry.name) or entry.name in own.disabled:
            continue
        if entry.name in own_names:
            overridden.add(entry.name)
        else:
            from_multi_point.append(entry)
    first = [entry for entry in own.enabled if entry.name in overridden]
    rest = [entry for entry in own.enabled if entry.name not in overridden]
    return first + from_multi_point + rest


def score_weight(name: str, score: PluginSet, multi_point: PluginSet) -> int:
    """Step 3."""
    for entry in (*score.enabled, *multi_point.enabled):
        if entry.name == name:
            return entry.weight or 1
    return 1


def effective_plugins(
    defaults: Sequence[Configured],
    multi_point: PluginSet,
    points: Mapping[ExtensionPoint, PluginSet],
    implements: Callable[[str, ExtensionPoint], bool],
    findings: Findings,
    at: YamlPath,
) -> dict[ExtensionPoint, tuple[PluginEntry, ...]]:
    """Every extension point's plugins; plugins enabled twice in one set are errors (upstream too)."""
    merged_multi_point = merge_set(defaults, multi_point)
    _report_duplicates(merged_multi_point, (*at, "multiPoint"), findings)
    result: dict[ExtensionPoint, tuple[PluginEntry, ...]] = {}
    for point in ExtensionPoint:
        own = points.get(point, PluginSet())
        _report_duplicates(own, (*at, point.value), findings)
        entries = expand(merged_multi_point, own, functools.partial(_implements_at, implements, point))
        names = dict.fromkeys(entry.name for entry in entries)
        if point is ExtensionPoint.SCORE:
            result[point] = tuple(
                PluginEntry(name, score_weight(name, own, merged_multi_point)) for name in names
            )
        else:
            result[point] = tuple(PluginEntry(name, 0) for name in names)
    return result


def _implements_at(
    implements: Callable[[str, ExtensionPoint], bool], point: ExtensionPoint, name: str
) -> bool:
    return implements(name, point)


def _report_duplicates(plugin_set: PluginSet, at: YamlPath, findings: Findings) -> None:
    seen: set[str] = set()
    for entry in plugin_set.enabled:
        if entry.name in seen:
            findings.error(
                entry.path or at, f"{entry.name} is enabled more than once under {at[-1]}: keep one"
            )
        seen.add(entry.name)
