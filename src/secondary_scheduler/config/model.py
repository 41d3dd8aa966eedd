"""The effective configuration: what the scheduler framework runs, with every default applied.

A profile no longer says "defaults, minus these, plus those": it lists, per extension point,
the plugins to call in order (with score weights), and the validated args of each plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, SerializeAsAny, field_validator

from secondary_scheduler.config.base import ConfigModel, GoDuration
from secondary_scheduler.config.extenders import Extender


class ExtensionPoint(StrEnum):
    """The scheduling framework's extension points, in the order a pod meets them."""

    QUEUE_SORT = "queueSort"
    PRE_ENQUEUE = "preEnqueue"
    PRE_FILTER = "preFilter"
    FILTER = "filter"
    POST_FILTER = "postFilter"
    PRE_SCORE = "preScore"
    SCORE = "score"
    RESERVE = "reserve"
    PERMIT = "permit"
    PRE_BIND = "preBind"
    BIND = "bind"
    POST_BIND = "postBind"


class PluginEntry(NamedTuple):
    """A plugin enabled at one extension point. `weight` is the score weight (>= 1) at SCORE, else 0."""

    name: str
    weight: int


def enabled_plugins(plugins: Mapping[ExtensionPoint, Sequence[PluginEntry]]) -> tuple[str, ...]:
    """Each plugin of `plugins` once, in the order it first appears across the extension points."""
    return tuple(dict.fromkeys(entry.name for point in ExtensionPoint for entry in plugins.get(point, ())))


FLOAT32_MAX = 3.4028234663852886e38
INT32_MAX = 2**31 - 1


class ClientConnection(ConfigModel):
    """How to reach the API server; qps/burst 0 mean the scheduler's defaults, as upstream.

    component-base refuses a negative burst; a negative qps it passes to client-go, which then
    drops client-side rate limiting altogether. That is almost never what a negative number in
    a config means, so it is refused here too, with the way to say "a lot" instead.
    """

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = ""
    qps: float = 50.0
    burst: int = 100

    @field_validator("qps")
    @classmethod
    def _default_qps(cls, value: float) -> float:
        if value < 0:
            raise ValueError(
                f"must not be negative, got {value:g}: 0 means the default (50); for a very high rate "
                "write a large number (client-go would read a negative qps as no rate limit at all)"
            )
        if value > FLOAT32_MAX:
            raise ValueError(f"{value:g} is out of range for qps (a float32: at most 3.4e38)")
        return value or 50.0

    @field_validator("burst")
    @classmethod
    def _default_burst(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"must be non-negative, got {value} (0 means the default, 100)")
        if value > INT32_MAX:
            raise ValueError(f"{value} is out of range for burst (an int32: at most {INT32_MAX})")
        return value or 100


class LeaderElection(ConfigModel):
    """Leader election between replicas (durations in seconds)."""

    leader_elect: bool = True
    lease_duration: GoDuration = 15.0
    renew_deadline: GoDuration = 10.0
    retry_period: GoDuration = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"

    @field_validator("resource_lock")
    @classmethod
    def _only_leases(cls, value: str) -> str:
        if value != "leases":
            raise ValueError(
                f"resourceLock must be 'leases' (got {value!r}): endpoints and configmaps locks "
                "were removed from Kubernetes"
            )
        return value


class Profile(BaseModel):
    """One schedulerName and the plugins that schedule its pods."""

    model_config = ConfigDict(frozen=True)

    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    plugins: dict[ExtensionPoint, tuple[PluginEntry, ...]]
    """Every extension point, each with the plugins to run there, in order."""
    plugin_args: dict[str, SerializeAsAny[BaseModel]]
    """Validated args of every enabled plugin that takes args (its PluginSpec.args_model)."""

    def enabled_plugins(self) -> tuple[str, ...]:
        """Each enabled plugin once, in the order it first appears across the extension points."""
        return enabled_plugins(self.plugins)


class SchedulerConfiguration(BaseModel):
    """The whole effective configuration. `percentage_of_nodes_to_score` None (or 0) is adaptive."""

    model_config = ConfigDict(frozen=True)

    parallelism: int
    percentage_of_nodes_to_score: int | None
    pod_initial_backoff_seconds: int
    pod_max_backoff_seconds: int
    enable_profiling: bool
    enable_contention_profiling: bool
    delay_cache_until_active: bool
    client_connection: ClientConnection
    leader_election: LeaderElection
    profiles: tuple[Profile, ...]
    extenders: tuple[Extender, ...] = ()
    """HTTP scheduler extenders, in the file's order (the scheduler calls the ignorable ones last)."""
