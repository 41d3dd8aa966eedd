"""The configuration file as users write it (all versions), with kube-scheduler's defaults.

Nested parts stay raw where they are validated on their own: each profile, its `plugins`,
each `pluginConfig` entry, and each plugin's args (against that plugin's model). One
malformed part then does not hide the errors of the others.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.model import ClientConnection, LeaderElection

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class PluginInput(ConfigModel):
    name: str
    weight: int | None = Field(None, ge=0, le=_INT32_MAX)


class PluginSetInput(ConfigModel):
    enabled: list[PluginInput] = Field(default_factory=list)
    disabled: list[PluginInput] = Field(default_factory=list)


class PluginsInput(ConfigModel):
    """`multiPoint` plus one set per extension point (field names match model.ExtensionPoint)."""

    multi_point: PluginSetInput = Field(default_factory=PluginSetInput)
    queue_sort: PluginSetInput = Field(default_factory=PluginSetInput)
    pre_enqueue: PluginSetInput = Field(default_factory=PluginSetInput)
    pre_filter: PluginSetInput = Field(default_factory=PluginSetInput)
    filter: PluginSetInput = Field(default_factory=PluginSetInput)
    post_filter: PluginSetInput = Field(default_factory=PluginSetInput)
    pre_score: PluginSetInput = Field(default_factory=PluginSetInput)
    score: PluginSetInput = Field(default_factory=PluginSetInput)
    reserve: PluginSetInput = Field(default_factory=PluginSetInput)
    permit: PluginSetInput = Field(default_factory=PluginSetInput)
    pre_bind: PluginSetInput = Field(default_factory=PluginSetInput)
    bind: PluginSetInput = Field(default_factory=PluginSetInput)
    post_bind: PluginSetInput = Field(default_factory=PluginSetInput)

    def by_yaml_name(self) -> dict[str, PluginSetInput]:
        """{"multiPoint": ..., "queueSort": ..., ...}, keyed the way the file spells them."""
        return {info.alias or name: getattr(self, name) for name, info in type(self).model_fields.items()}


class PluginConfigInput(ConfigModel):
    name: str
    args: dict[str, Any] | None = None


class ProfileInput(ConfigModel):
    """`plugins` is a PluginsInput and each `pluginConfig` entry a PluginConfigInput."""

    scheduler_name: str = Field("default-scheduler", min_length=1)
    percentage_of_nodes_to_score: int | None = Field(None, ge=0, le=100)
    plugins: dict[str, Any] = Field(default_factory=dict)
    plugin_config: list[dict[str, Any]] = Field(default_factory=list)


class DocumentInput(ConfigModel):
    """Top-level fields. `enableContentionProfiling` unset follows `enableProfiling`, as upstream."""

    api_version: str
    kind: str
    profiles: list[dict[str, Any]] = Field(default_factory=list)
    parallelism: int = Field(16, gt=0, le=_INT32_MAX)
    percentage_of_nodes_to_score: int | None = Field(None, ge=0, le=100)
    pod_initial_backoff_seconds: int = Field(1, gt=0, le=_INT64_MAX)
    pod_max_backoff_seconds: int = Field(10, gt=0, le=_INT64_MAX)
    client_connection: ClientConnection = Field(default_factory=ClientConnection)
    leader_election: LeaderElection = Field(default_factory=LeaderElection)
    enable_profiling: bool = True
    enable_contention_profiling: bool | None = None
    delay_cache_until_active: bool = False
    extenders: list[Any] = Field(default_factory=list)
    healthz_bind_address: str | None = None
    metrics_bind_address: str | None = None
