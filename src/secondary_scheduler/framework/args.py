"""Plugin args in one shape, whatever the configuration layer hands over."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from secondary_scheduler.config.base import ArgsContext
from secondary_scheduler.config.errors import format_path

if TYPE_CHECKING:
    from secondary_scheduler.framework.interface import Plugin

log = logging.getLogger(__name__)


def args_mapping(args: object) -> Mapping[str, Any]:
    """Args as the camelCase mapping of KubeSchedulerConfiguration's ``pluginConfig[].args``.

    Accepts None (defaults), a mapping, or a pydantic model whose field aliases are the
    YAML keys (the config loader's validated args).
    """
    if args is None:
        return {}
    if isinstance(args, Mapping):
        return args
    dump = getattr(args, "model_dump", None)
    if callable(dump):
        dumped = dump(by_alias=True, exclude_none=True)
        if isinstance(dumped, Mapping):
            return dumped
    raise TypeError(f"plugin args must be a mapping or a pydantic model, not {type(args).__name__}")


def validated_args(plugin: type[Plugin], args: object) -> Any:
    """The args ``plugin`` is built with: an instance of its ``args_model`` (defaults when None).

    The config loader's validated model passes as is; a mapping (tests, in-memory profiles)
    is validated here, with the loader's rules and its warnings logged. A plugin without
    an args model gets ``args`` unchanged.
    """
    model = plugin.args_model
    if model is None or isinstance(args, model):
        return args
    context = ArgsContext()
    validated = model.model_validate(dict(args_mapping(args)), context=context)
    for path, message in context.warnings:
        log.warning("%s args: %s: %s", plugin.name, format_path(path), message)
    return validated
