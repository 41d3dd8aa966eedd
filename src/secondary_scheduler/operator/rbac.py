"""RBAC the scheduler needs beyond system:kube-scheduler, derived from its configuration.

Upstream binds only system:kube-scheduler and system:volume-scheduler, and users add the
rest by hand when a plugin reads something else (the KubeVirt notes: StorageClasses).
Here the enabled plugins and metric providers decide: each row below says what a plugin
reads and why. The rules go into one extra ClusterRole (`secondary-scheduler-plugins`);
token Secrets named by `tokenSecretRef` get a Role limited to those Secrets.

This reads the raw YAML, not the loader's model, so it also serves plugins that only a
foreign scheduler image ships (Coscheduling and friends).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.operator.configcheck import is_our_image

READ = ("get", "list", "watch")


def _rule(group: str, resources: tuple[str, ...], verbs: tuple[str, ...] = READ) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}


@dataclass(frozen=True)
class Need:
    """Rules one plugin (or provider) needs, and the sentence that says why."""

    why: str
    rules: tuple[dict[str, Any], ...]


VOLUME_PLUGINS = ("VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits")
TRIMARAN_PLUGINS = ("TargetLoadPacking", "LoadVariationRiskBalancing", "LowRiskOverCommitment")

_VOLUMES = Need(
    "volume plugins read StorageClasses, CSI objects and volumes",
    (
        _rule("storage.k8s.io", ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities")),
        _rule("", ("persistentvolumes", "persistentvolumeclaims")),
    ),
)
PLUGIN_NEEDS: dict[str, Need] = {
    **dict.fromkeys(VOLUME_PLUGINS, _VOLUMES),
    "Coscheduling": Need(
        "Coscheduling reads PodGroups and updates their status",
        (
            _rule("scheduling.x-k8s.io", ("podgroups",), (*READ, "update", "patch")),
            _rule("scheduling.x-k8s.io", ("podgroups/status",), ("update", "patch")),
        ),
    ),
    "CapacityScheduling": Need(
        "CapacityScheduling reads ElasticQuotas and updates their status",
        (
            _rule("scheduling.x-k8s.io", ("elasticquotas",)),
            _rule("scheduling.x-k8s.io", ("elasticquotas/status",), ("update", "patch")),
        ),
    ),
    "NodeResourceTopologyMatch": Need(
        "NodeResourceTopologyMatch reads NodeResourceTopologies",
        (_rule("topology.node.k8s.io", ("noderesourcetopologies",)),),
    ),
    "NetworkOverhead": Need(
        "NetworkOverhead reads AppGroups and NetworkTopologies",
        (
            _rule("appgroup.diktyo.x-k8s.io", ("appgroups",)),
            _rule("networktopology.diktyo.x-k8s.io", ("networktopologies",)),
        ),
    ),
    "TopologicalSort": Need(
        "TopologicalSort reads AppGroups", (_rule("appgroup.diktyo.x-k8s.io", ("appgroups",)),)
    ),
}
METRICS_SERVER = Need(
    "the KubernetesMetricsServer metric provider reads node metrics from metrics.k8s.io",
    (_rule("metrics.k8s.io", ("nodes", "pods"), ("get", "list")),),
)
SCHEDULED_EVENTS = Need(
    "our scheduler lists Scheduled Events when it starts to lead, to write those a killed "
    "predecessor left unwritten (scheduler/eventrecovery.py)",
    (_rule("events.k8s.io", ("events",), ("list",)),),
)


@dataclass(frozen=True)
class DerivedRbac:
    rules: tuple[dict[str, Any], ...] = ()
    reasons: tuple[str, ...] = ()
    secrets: tuple[tuple[str, str], ...] = ()
    """(namespace, name) of each Secret a metric provider reads its token from."""


def derive(document: dict[str, Any] | None, image: str) -> DerivedRbac:
    """What `document` (a parsed KubeSchedulerConfiguration) needs the scheduler to be allowed."""
    if not document:
        return DerivedRbac()
    needs: dict[str, Need] = {}
    secrets: dict[tuple[str, str], None] = {}
    for profile in _dicts(document.get("profiles")):
        enabled = _enabled_plugins(profile, implicit_volume_plugins=not is_our_image(image))
        for plugin in enabled:
            if plugin in PLUGIN_NEEDS:
                needs.setdefault(PLUGIN_NEEDS[plugin].why, PLUGIN_NEEDS[plugin])
        for plugin in TRIMARAN_PLUGINS:
            if plugin not in enabled:
                continue
            args = _plugin_args(profile, plugin)
            provider = _mapping(args.get("metricProvider"))
            if not args.get("watcherAddress") and provider.get("type") in (
                None,
                "",
                "KubernetesMetricsServer",
            ):
                needs.setdefault(METRICS_SERVER.why, METRICS_SERVER)
            ref = provider.get("tokenSecretRef")
            if isinstance(ref, dict) and ref.get("namespace") and ref.get("name"):
                secrets[(str(ref["namespace"]), str(ref["name"]))] = None
    if is_our_image(image):
        needs.setdefault(SCHEDULED_EVENTS.why, SCHEDULED_EVENTS)
    rules: dict[str, dict[str, Any]] = {}
    for need in needs.values():
        for rule in need.rules:
            rules.setdefault(repr(rule), rule)
    return DerivedRbac(tuple(rules.values()), tuple(needs), tuple(secrets))


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict):
            yield item


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _names(entries: Any) -> set[str]:
    return {str(entry.get("name")) for entry in _dicts(entries) if entry.get("name")}


def _enabled_plugins(profile: dict[str, Any], implicit_volume_plugins: bool) -> set[str]:
    """Every plugin a profile names as enabled; for a foreign image also kube-scheduler's
    default volume plugins, unless the profile disables them."""
    plugins = _mapping(profile.get("plugins"))
    enabled: set[str] = set()
    disabled: set[str] = set()
    for point in plugins.values():
        if isinstance(point, dict):
            enabled |= _names(point.get("enabled"))
            disabled |= _names(point.get("disabled"))
    if implicit_volume_plugins and "*" not in disabled:
        enabled |= set(VOLUME_PLUGINS) - disabled
    return enabled


def _plugin_args(profile: dict[str, Any], plugin: str) -> dict[str, Any]:
    for entry in _dicts(profile.get("pluginConfig")):
        if entry.get("name") == plugin and isinstance(entry.get("args"), dict):
            return dict(entry["args"])
    return {}
