"""The effective configuration written back as a v1 KubeSchedulerConfiguration.

Nothing is left to defaulting: `multiPoint` disables "*", so each extension point lists
exactly the plugins it runs, in order, and every enabled plugin's args appear in full. The
result loads back to the same effective configuration, which makes it a faithful view of
what the scheduler will do.
"""

from __future__ import annotations

from typing import Any

import yaml

from secondary_scheduler.config.model import ExtensionPoint, Profile, SchedulerConfiguration
from secondary_scheduler.config.versions import GROUP, KIND


def dump_config(config: SchedulerConfiguration) -> dict[str, Any]:
    """The configuration as a v1 document (plain dicts and lists, YAML/JSON-ready)."""
    document: dict[str, Any] = {"apiVersion": f"{GROUP}/v1", "kind": KIND, "parallelism": config.parallelism}
    if config.percentage_of_nodes_to_score is not None:
        document["percentageOfNodesToScore"] = config.percentage_of_nodes_to_score
    document |= {
        "podInitialBackoffSeconds": config.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": config.pod_max_backoff_seconds,
        "enableProfiling": config.enable_profiling,
        "enableContentionProfiling": config.enable_contention_profiling,
        "delayCacheUntilActive": config.delay_cache_until_active,
        "clientConnection": config.client_connection.model_dump(mode="json"),
        "leaderElection": config.leader_election.model_dump(mode="json"),
        "profiles": [_profile(profile) for profile in config.profiles],
    }
    if config.extenders:
        document["extenders"] = [
            extender.model_dump(mode="json", by_alias=True, exclude_none=True)
            for extender in config.extenders
        ]
    return document


def dump_config_yaml(config: SchedulerConfiguration) -> str:
    return yaml.safe_dump(dump_config(config), sort_keys=False, allow_unicode=True)


def _profile(profile: Profile) -> dict[str, Any]:
    result: dict[str, Any] = {"schedulerName": profile.scheduler_name}
    if profile.percentage_of_nodes_to_score is not None:
        result["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    plugins: dict[str, Any] = {"multiPoint": {"disabled": [{"name": "*"}]}}
    for point in ExtensionPoint:
        if profile.plugins[point]:
            plugins[point.value] = {
                "enabled": [
                    {"name": entry.name, "weight": entry.weight}
                    if point is ExtensionPoint.SCORE
                    else {"name": entry.name}
                    for entry in profile.plugins[point]
                ]
            }
    result["plugins"] = plugins
    result["pluginConfig"] = [
        {"name": name, "args": args.model_dump(mode="json", by_alias=True, exclude_none=True)}
        for name, args in profile.plugin_args.items()
    ]
    return result
