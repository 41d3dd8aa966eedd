"""The profile a Framework runs: plugins per extension point, in order, with score weights and args.

The framework reads a profile through ``ProfileLike``, so it does not depend on how the
configuration file is loaded: the loader's effective ``config.model.Profile`` fits it as
is, and ``ProfileSpec`` is the plain version for tests and in-memory use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from secondary_scheduler.config.model import ExtensionPoint

__all__ = ["ExtensionPoint", "ProfileLike", "ProfileSpec"]


class ProfileLike(Protocol):
    @property
    def scheduler_name(self) -> str: ...

    @property
    def plugins(self) -> Mapping[Any, Sequence[tuple[str, int]]]:
        """Extension point (its YAML name, or a str enum of it) -> (plugin name, weight) in calling order."""
        ...

    @property
    def plugin_args(self) -> Mapping[str, object]: ...

    @property
    def percentage_of_nodes_to_score(self) -> int | None: ...


@dataclass(frozen=True)
class ProfileSpec:
    scheduler_name: str
    plugins: Mapping[str, Sequence[tuple[str, int]]]
    """Extension point -> (plugin name, weight) in calling order; weights count at score only (0 is 1)."""
    plugin_args: Mapping[str, object] = field(default_factory=dict)
    """Plugin name -> args: None, a camelCase mapping as in the YAML, or a pydantic model with aliases."""
    percentage_of_nodes_to_score: int | None = None
    """None: the framework's global value applies; 0: kube-scheduler's adaptive default."""
