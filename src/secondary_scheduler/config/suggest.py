"""What an unknown field most likely meant, worded as the fix.

In order: the same name in another case (`Token` -> `token`); the same name at another level
of the document, which is what lost or extra indentation looks like (`leaderElect` at the
top -> indent it under leaderElection); a near spelling at this level; else the fields
allowed here. "Another level" is searched in a `FieldIndex` of every field path the file may
contain, built from the schema and the args models of the plugins the command knows (the
plugin catalog builds it once: `PluginCatalog.fields`).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from secondary_scheduler.config.base import ResourceList, ResourceWeights
from secondary_scheduler.config.errors import YamlPath, format_path
from secondary_scheduler.config.legacy import LegacyRequestedToCapacityRatioArgs, LegacyResourcesArgs
from secondary_scheduler.config.schema import DocumentInput, PluginConfigInput, PluginsInput, ProfileInput

Template = tuple[str, ...]
"""A field path with "[]" for every list index: `profiles[].plugins.score`."""

FieldIndex = Mapping[str, list[Template]]
"""Field name -> every path of a KubeSchedulerConfiguration where a field of that name may be."""

_ARGS = ("profiles", "[]", "pluginConfig", "[]", "args")
_RESOURCE_MAPS = (ResourceList, ResourceWeights)
_COMMON_RESOURCES = ("cpu", "memory")  # keys of resource maps, so a stray `cpu:` finds its map


@dataclass(frozen=True)
class Suggestion:
    text: str
    deeper: bool
    """The key belongs deeper than where it is: its parent's indentation was probably lost."""


def suggest_field(
    key: str, parent: YamlPath, allowed: Sequence[str], elsewhere: FieldIndex | None
) -> Suggestion:
    """``elsewhere``: where else ``key`` may be in a KubeSchedulerConfiguration (None for other
    documents, such as a SecondaryScheduler CR: then only this level is searched)."""
    here = template(parent)
    same_level = [name for name in allowed if name.lower() == key.lower()]
    if same_level:
        return Suggestion(f"did you mean `{same_level[0]}`? Field names are case-sensitive", deeper=False)
    for matches in (lambda name: name == key, lambda name: name.lower() == key.lower()):
        if elsewhere is None:
            break
        places = [place for name, found in elsewhere.items() if matches(name) for place in found]
        places = [place for place in places if place[:-1] != here]
        if places:
            return _relocate(key, parent, places)
    close = difflib.get_close_matches(key, allowed, n=3, cutoff=0.6)
    if close:
        return Suggestion(f"did you mean {' or '.join(f'`{name}`' for name in close)}?", deeper=False)
    return Suggestion(f"fields allowed here: {', '.join(allowed)}", deeper=False)


def template(path: YamlPath) -> Template:
    return tuple("[]" if isinstance(part, int) else part for part in path)


def allowed_fields(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The YAML names of the fields of the model found at `loc` inside `model` (none if not a model)."""
    current: Any = model
    for part in loc:
        current = _strip_optional(current)
        if isinstance(part, int) and get_origin(current) is list:
            current = get_args(current)[0]
        elif _is_model(current):
            field = {info.alias or name: info for name, info in current.model_fields.items()}.get(str(part))
            current = field.annotation if field else None
        elif get_origin(current) is dict:
            current = get_args(current)[1]
        else:
            return []
    current = _strip_optional(current)
    return [info.alias or name for name, info in current.model_fields.items()] if _is_model(current) else []


def _relocate(key: str, parent: YamlPath, places: list[Template]) -> Suggestion:
    here = template(parent)
    below = [place for place in places if place[: len(here)] == here]
    if below:
        shortest = min(len(place) for place in below)
        relative = [place[len(here) :] for place in below if len(place) == shortest]
        target, legend = _render(relative)
        return Suggestion(f"did you mean {target}? indent it under {_parent(relative)}{legend}", deeper=True)

    def closeness(place: Template) -> tuple[int, int]:
        shared = next(
            (i for i, (a, b) in enumerate(zip(place, here, strict=False)) if a != b),
            min(len(place), len(here)),
        )
        return (-shared, len(place))

    best = min(closeness(place) for place in places)
    chosen = [place for place in places if closeness(place) == best]
    target, legend = _render(chosen)
    where = format_path(parent) or "the top level"
    ancestor = all(here[: len(place) - 1] == place[:-1] for place in chosen)
    fix = "un-indent it" if ancestor else "move it there"
    if all(len(place) == 1 for place in chosen):
        return Suggestion(f"`{key}` belongs at the top level, not under {where}: {fix}", deeper=False)
    return Suggestion(
        f"did you mean {target}? `{key}` belongs under {_parent(chosen)}, not under {where}: {fix}{legend}",
        deeper=False,
    )


def _parent(places: list[Template]) -> str:
    """Where the key goes, in words: "leaderElection", "an item of profiles", "the top level"."""
    parents = [place[:-1] for place in places]
    if all(parent[-1:] == ("[]",) for parent in parents):
        return "an item of " + _render([parent[:-1] for parent in parents])[0]
    return _render(parents)[0]


def _render(places: list[Template]) -> tuple[str, str]:
    """One path, or a path with `*` where the choices differ in one place, plus a legend for `*`."""
    unique = list(dict.fromkeys(places))
    if len(unique) == 1:
        return format_path(unique[0]) or "the top level", ""
    lengths = {len(place) for place in unique}
    differing = [i for i in range(min(lengths)) if len({place[i] for place in unique}) > 1]
    if len(lengths) == 1 and len(differing) == 1:
        position = differing[0]
        options = list(dict.fromkeys(place[position] for place in unique))
        shown = ", ".join(options[:4]) + (", …" if len(options) > 4 else "")
        starred = (*unique[0][:position], "*", *unique[0][position + 1 :])
        return format_path(starred), f" (* is one of {shown})"
    return " or ".join(format_path(place) for place in unique[:3]), ""


def field_index(plugin_args_models: Iterable[type[BaseModel]]) -> FieldIndex:
    """Every field path of a KubeSchedulerConfiguration whose plugins take these args models."""
    index: dict[str, list[Template]] = {}
    _add_fields(DocumentInput, (), index)
    _add_fields(ProfileInput, ("profiles", "[]"), index)
    _add_fields(PluginsInput, ("profiles", "[]", "plugins"), index)
    _add_fields(PluginConfigInput, ("profiles", "[]", "pluginConfig", "[]"), index)
    legacy: list[type[BaseModel]] = [LegacyResourcesArgs, LegacyRequestedToCapacityRatioArgs]
    for model in [*plugin_args_models, *legacy]:
        _add_fields(model, _ARGS, index)
    return {name: list(dict.fromkeys(places)) for name, places in index.items()}


def _add_fields(model: type[BaseModel], prefix: Template, index: dict[str, list[Template]]) -> None:
    for name, info in model.model_fields.items():
        alias = info.alias or name
        path = (*prefix, alias)
        index.setdefault(alias, []).append(path)
        annotation = _strip_optional(info.annotation)
        if annotation in _RESOURCE_MAPS:
            for resource in _COMMON_RESOURCES:
                index.setdefault(resource, []).append((*path, resource))
        elif get_origin(annotation) is list:
            item = _strip_optional(get_args(annotation)[0])
            if _is_model(item):
                _add_fields(item, (*path, "[]"), index)
        elif _is_model(annotation):
            _add_fields(annotation, path, index)


def _strip_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        members = [member for member in get_args(annotation) if member is not type(None)]
        return members[0] if len(members) == 1 else annotation
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
