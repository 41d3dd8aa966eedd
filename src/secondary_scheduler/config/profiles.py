"""One profile as written -> the effective Profile: plugins merged, args validated and defaulted."""

from __future__ import annotations

import difflib
import re
from typing import Any, TypeVar

from pydantic import BaseModel

from secondary_scheduler.apivalidation import qualified_name_problem
from secondary_scheduler.config.base import ArgsContext, ConfigModel
from secondary_scheduler.config.diagnose import validate_model
from secondary_scheduler.config.errors import Findings, YamlPath, format_path
from secondary_scheduler.config.legacy import STRATEGY_OF, LegacyResourcesArgs, LegacyScoring, args_model
from secondary_scheduler.config.legacy import disabled_note as legacy_disabled_note
from secondary_scheduler.config.legacy import enabled_note as legacy_enabled_note
from secondary_scheduler.config.merge import Configured, PluginSet, effective_plugins
from secondary_scheduler.config.model import ExtensionPoint, PluginEntry, Profile, enabled_plugins
from secondary_scheduler.config.plugin_catalog import DEFAULT_MULTI_POINT, PluginCatalog
from secondary_scheduler.config.schema import PluginConfigInput, PluginSetInput, PluginsInput, ProfileInput
from secondary_scheduler.config.versions import GROUP, ApiVersion

M = TypeVar("M", bound=ConfigModel)

_DEFAULTS = tuple(Configured(name, weight) for name, weight in DEFAULT_MULTI_POINT)
_FIT = "NodeResourcesFit"


def build_profile(
    raw: dict[str, Any], at: YamlPath, version: ApiVersion, findings: Findings, catalog: PluginCatalog
) -> Profile | None:
    """The effective profile, or None if any part of it is malformed (every error recorded).

    The profile's own fields, its `plugins` and each `pluginConfig` entry are validated
    separately, so a mistake in one still lets the others be checked. `catalog`: the
    plugins that exist, where each may run and its args model.
    """
    header = validate_model(ProfileInput, raw, at, findings, fields=catalog.fields)
    plugins, legacy = _effective_plugins(raw.get("plugins"), (*at, "plugins"), findings, catalog)
    configs = _plugin_configs(raw.get("pluginConfig"), (*at, "pluginConfig"), findings, catalog)
    enabled = enabled_plugins(plugins) if plugins is not None else None
    args = _plugin_args(configs, at, enabled, legacy, version, findings, catalog)
    if header is None or plugins is None:
        return None
    name_problem = scheduler_name_problem(header.scheduler_name)
    if name_problem:
        findings.value_error((*at, "schedulerName"), name_problem)
        return None
    if header.scheduler_name == "default-scheduler":
        findings.warn(
            (*at, "schedulerName"),
            "this profile is named default-scheduler, like the cluster's own scheduler: as a secondary "
            "scheduler give it its own name (e.g. secondary-scheduler) so both do not claim the same pods",
        )
    return Profile(
        scheduler_name=header.scheduler_name,
        percentage_of_nodes_to_score=header.percentage_of_nodes_to_score,
        plugins=plugins,
        plugin_args=args,
    )


def scheduler_name_problem(name: str) -> str | None:
    """Why no Event could ever be reported for a profile named `name` (None: it is fine).

    kube-scheduler takes a profile's schedulerName as the reportingController of its Scheduled
    and FailedScheduling Events, which the API server accepts only as a qualified name: a name
    pasted with typographic quotes (“secondary”) loads, schedules pods that copy it exactly, and
    has every one of its Events refused.
    """
    problem = qualified_name_problem(name)
    if problem is None:
        return None
    cleaned = re.sub(r"[^A-Za-z0-9._/-]", "", name).strip("-._/")
    hint = f": did you mean {cleaned!r}?" if cleaned and qualified_name_problem(cleaned) is None else ""
    return (
        f"{problem}; the API server refuses every Event reported under it (a profile's Scheduled "
        f"and FailedScheduling Events name their schedulerName as reportingController){hint}"
    )


def _effective_plugins(
    raw: Any, at: YamlPath, findings: Findings, catalog: PluginCatalog
) -> tuple[dict[ExtensionPoint, tuple[PluginEntry, ...]] | None, LegacyScoring | None]:
    """Every extension point's plugins, and the legacy score plugin enabled (if any)."""
    if not isinstance(raw, dict | None):
        return None, None  # ProfileInput reports the wrong type
    plugins_input = validate_model(PluginsInput, raw or {}, at, findings, fields=catalog.fields)
    if plugins_input is None:
        return None, None
    multi_point, points, legacy = _plugin_sets(plugins_input.by_yaml_name(), at, findings, catalog)
    plugins = effective_plugins(
        _DEFAULTS,
        multi_point,
        points,
        lambda name, point: point in catalog[name].extension_points,
        findings,
        at,
    )
    _check_required_points(plugins, at, findings)
    return plugins, legacy


def _plugin_configs(
    raw: Any, at: YamlPath, findings: Findings, catalog: PluginCatalog
) -> list[tuple[int, PluginConfigInput]]:
    """The well-formed `pluginConfig` entries, with their indices."""
    if not isinstance(raw, list):
        return []  # ProfileInput reports the wrong type
    configs = []
    for index, item in enumerate(raw):
        if isinstance(item, dict):
            entry = validate_model(PluginConfigInput, item, (*at, index), findings, fields=catalog.fields)
            if entry is not None:
                configs.append((index, entry))
    return configs


def _plugin_sets(
    sets: dict[str, PluginSetInput], at: YamlPath, findings: Findings, catalog: PluginCatalog
) -> tuple[PluginSet, dict[ExtensionPoint, PluginSet], LegacyScoring | None]:
    """The user's sets, with unknown or misplaced plugins reported and legacy names mapped."""
    legacy: list[LegacyScoring] = []
    converted: dict[str, PluginSet] = {}
    for key, plugin_set in sets.items():
        point = None if key == "multiPoint" else ExtensionPoint(key)
        enabled: list[Configured] = []
        for index, entry in enumerate(plugin_set.enabled):
            entry_at = (*at, key, "enabled", index)
            name = entry.name
            if name in STRATEGY_OF and point in (None, ExtensionPoint.SCORE):
                findings.warn((*entry_at, "name"), legacy_enabled_note(name))
                legacy.append(LegacyScoring(name, entry_at))
                name = _FIT
            spec = catalog.get(name)
            if spec is None:
                findings.error((*entry_at, "name"), _not_shipped(name, key, catalog))
                continue
            if point is not None and point not in spec.extension_points:
                implemented = ", ".join(p.value for p in ExtensionPoint if p in spec.extension_points)
                findings.error(
                    (*entry_at, "name"), f"{name} does not implement {key}; enable it under: {implemented}"
                )
                continue
            scores = (
                ExtensionPoint.SCORE in spec.extension_points
                if point is None
                else point is ExtensionPoint.SCORE
            )
            if entry.weight and not scores:
                findings.warn((*entry_at, "weight"), f"ignored: {name} does not score nodes here")
            if spec.enabled_warning:
                findings.warn((*entry_at, "name"), spec.enabled_warning)
            enabled.append(Configured(name, entry.weight if scores else None, entry_at))
        disabled: set[str] = set()
        for index, entry in enumerate(plugin_set.disabled):
            entry_at = (*at, key, "disabled", index, "name")
            if entry.name in STRATEGY_OF:
                findings.warn(entry_at, legacy_disabled_note(entry.name))
                continue
            if entry.name != "*" and entry.name not in catalog:
                findings.warn(entry_at, f"nothing to disable: {_not_shipped(entry.name, key, catalog)}")
            disabled.add(entry.name)
        converted[key] = PluginSet(tuple(enabled), frozenset(disabled))
    if len({choice.name for choice in legacy}) > 1:
        findings.error(
            (*legacy[-1].path, "name"),
            f"{' and '.join(dict.fromkeys(choice.name for choice in legacy))} cannot both be enabled: each "
            f"sets NodeResourcesFit's scoringStrategy; keep one",
        )
    multi_point = converted.pop("multiPoint")
    return (
        multi_point,
        {ExtensionPoint(key): value for key, value in converted.items()},
        legacy[0] if legacy else None,
    )


def _not_shipped(name: str, where: str, catalog: PluginCatalog) -> str:
    if name in STRATEGY_OF:
        return (
            f"{name} was a score plugin (merged into NodeResourcesFit in v1beta2); "
            f"it cannot be used under {where}"
        )
    close = [known for known in catalog if known.lower() == name.lower()]
    close = close or difflib.get_close_matches(name, list(catalog), n=1, cutoff=0.7)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{name!r} is not a plugin this scheduler ships{hint}; it has: {catalog.names()}"


def _check_required_points(
    plugins: dict[ExtensionPoint, tuple[PluginEntry, ...]], at: YamlPath, findings: Findings
) -> None:
    queue_sort = [entry.name for entry in plugins[ExtensionPoint.QUEUE_SORT]]
    if len(queue_sort) != 1:
        found = ", ".join(queue_sort) or "none"
        findings.error(
            (*at, "queueSort"),
            f"exactly one queueSort plugin must be enabled (found: {found}); PrioritySort is ours",
        )
    if not plugins[ExtensionPoint.BIND]:
        findings.error((*at, "bind"), "no bind plugin is enabled: enable DefaultBinder")


def _plugin_args(
    configs: list[tuple[int, PluginConfigInput]],
    at: YamlPath,
    enabled: tuple[str, ...] | None,
    legacy: LegacyScoring | None,
    version: ApiVersion,
    findings: Findings,
    catalog: PluginCatalog,
) -> dict[str, BaseModel]:
    """Validated args for every enabled plugin that has an args model, defaulted where not given.

    With `enabled` None (the plugins could not be merged) the given args are still validated.
    """
    given: dict[str, tuple[YamlPath, dict[str, Any]]] = {}
    for index, entry in configs:
        entry_at = (*at, "pluginConfig", index)
        if entry.name in given:
            first = format_path(given[entry.name][0][:-1])
            findings.error(
                (*entry_at, "name"), f"duplicate pluginConfig for {entry.name} (first at {first}): merge them"
            )
            continue
        given[entry.name] = (
            (*entry_at, "args"),
            _without_type_meta(entry.name, entry.args or {}, (*entry_at, "args"), findings),
        )

    legacy_args: LegacyResourcesArgs | None = None
    for name, (args_at, raw) in given.items():
        name_at = (*args_at[:-1], "name")
        not_enabled = f"ignored: {name} is not enabled in this profile"
        if name in STRATEGY_OF:
            validated = _validate_args(args_model(name), raw, args_at, version, findings, catalog)
            if legacy is not None and legacy.name == name:
                legacy_args = validated
            elif enabled is not None:
                findings.warn(name_at, not_enabled)
        elif name not in catalog:
            findings.warn(name_at, f"ignored: {_not_shipped(name, 'pluginConfig', catalog)}")
        elif enabled is None or name not in enabled:
            model = catalog[name].args_model
            if model is not None:
                _validate_args(model, raw, args_at, version, findings, catalog)
            if enabled is not None:
                findings.warn(name_at, not_enabled)
        elif catalog[name].args_model is None and raw:
            findings.warn(args_at, f"ignored: {name} takes no args")

    result: dict[str, BaseModel] = {}
    for name in enabled or ():
        model = catalog[name].args_model
        if model is None:
            continue
        args_at, raw = given.get(name, ((*at, "pluginConfig"), {}))
        if name == _FIT and legacy is not None:
            if name not in given:
                args_at = legacy.path
            raw = legacy.fit_args(raw, legacy_args, args_at, findings)
        validated_args = _validate_args(model, raw, args_at, version, findings, catalog)
        if validated_args is not None:
            result[name] = validated_args
    return result


def _validate_args(
    model: type[M],
    raw: dict[str, Any],
    at: YamlPath,
    version: ApiVersion,
    findings: Findings,
    catalog: PluginCatalog,
) -> M | None:
    context = ArgsContext(version)
    validated = validate_model(model, raw, at, findings, context, fields=catalog.fields)
    for path, message in context.warnings:
        findings.warn((*at, *path), message)
    return validated


def _without_type_meta(name: str, raw: dict[str, Any], at: YamlPath, findings: Findings) -> dict[str, Any]:
    """Args may carry `apiVersion`/`kind` (kube-scheduler writes them); check and drop them."""
    args = dict(raw)
    kind = args.pop("kind", None)
    api_version = args.pop("apiVersion", None)
    if kind is not None and kind != f"{name}Args":
        findings.error((*at, "kind"), f"kind must be {name}Args for pluginConfig {name}, got {kind!r}")
    if api_version is not None and (
        not isinstance(api_version, str) or api_version.partition("/")[0] != GROUP
    ):
        findings.error((*at, "apiVersion"), f"apiVersion must be {GROUP}/<version>, got {api_version!r}")
    return args
