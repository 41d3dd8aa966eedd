"""Plugin args in one shape, whatever the configuration layer hands over."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
