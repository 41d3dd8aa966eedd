"""Which pods the profile's PreFilter plugins read: what lets the dry run skip PreFilter.

kube-scheduler's dry run removes and re-adds pods on a copy of the node and updates the
PreFilter state of the plugins that have PreFilterExtensions (InterPodAffinity,
PodTopologySpread, VolumeRestrictions: they count other pods); every other plugin's state
is reused as it is. Our plugins have no such extensions, so the dry run runs PreFilter
again after changing the table, which costs a walk over the cluster's pods per step.

Most of the time that is not needed: a victim changes PreFilter's output only if it is one
of the pods those plugins count for this preemptor (matched by a spreading constraint, by
an affinity term either way, or sharing a claim). ``pre_filter_reads`` answers that per
pod, for the plugins it knows; a plugin it does not know is assumed to read every pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from secondary_scheduler.framework.interface import PreFilterPlugin
from secondary_scheduler.framework.podinfo import DO_NOT_SCHEDULE, PodInfo
from secondary_scheduler.plugins.interpodaffinity import InterPodAffinity
from secondary_scheduler.plugins.podtopologyspread import PodTopologySpread

PodPredicate = Callable[[PodInfo], bool]

POD_INDEPENDENT = frozenset(
    {
        "NodeResourcesFit",
        "NodePorts",
        "NodeAffinity",
        "DynamicResources",
        "VolumeBinding",
        "VolumeZone",
        "NodeVolumeLimits",
    }
)
"""In-tree PreFilters whose output depends on the incoming pod and on objects, never on other
pods (upstream gives them no PreFilterExtensions)."""


def pre_filter_reads(plugins: Iterable[PreFilterPlugin], pod: PodInfo) -> PodPredicate:
    """A predicate: whether adding or removing that pod may change PreFilter's output for ``pod``."""
    checks: list[PodPredicate] = []
    for plugin in plugins:
        if plugin.name in POD_INDEPENDENT:
            continue
        if isinstance(plugin, PodTopologySpread):
            checks.append(_spread_reads(plugin, pod))
        elif isinstance(plugin, InterPodAffinity):
            checks.append(_affinity_reads(plugin, pod))
        elif plugin.name == "VolumeRestrictions":
            checks.append(_claims_read(pod))
        else:
            return lambda other: True
    return lambda other: any(check(other) for check in checks)


def _spread_reads(plugin: PodTopologySpread, pod: PodInfo) -> PodPredicate:
    """Spreading counts the pods of the pod's namespace that a DoNotSchedule constraint selects."""
    selectors = [constraint.selector for constraint in plugin.constraints(pod, DO_NOT_SCHEDULE)]
    return lambda other: (
        other.namespace == pod.namespace and any(selector.matches(other.labels) for selector in selectors)
    )


def _affinity_reads(plugin: InterPodAffinity, pod: PodInfo) -> PodPredicate:
    """Required affinity counts pods the pod's terms select, and pods whose anti-affinity selects it."""
    labels = plugin.namespace_labels
    terms = (*pod.required_affinity_terms, *pod.required_anti_affinity_terms)

    def reads(other: PodInfo) -> bool:
        if any(
            term.matches(pod.namespace, pod.labels, labels) for term in other.required_anti_affinity_terms
        ):
            return True
        return any(term.matches(other.namespace, other.labels, labels) for term in terms)

    return reads


def _claims_read(pod: PodInfo) -> PodPredicate:
    """ReadWriteOncePod counts the pods using one of the pod's claims."""
    mine = _claim_names(pod.obj)
    return lambda other: (
        bool(mine) and other.namespace == pod.namespace and bool(mine & _claim_names(other.obj))
    )


def _claim_names(obj: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    name = str((obj.get("metadata") or {}).get("name", ""))
    for volume in (obj.get("spec") or {}).get("volumes") or ():
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            names.add(str(claim.get("claimName", "")))
        elif volume.get("ephemeral") is not None:
            names.add(f"{name}-{volume.get('name', '')}")
    return names
