"""``PodInfo``: everything the scheduler reads from a pod, parsed once when the pod is seen.

Plugins run for every pod against every node, so they must not re-parse pod JSON; the
runtime builds a PodInfo when a pod enters the queue or the node cache and shares it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.affinityterms import (
    AffinityTerm,
    WeightedAffinityTerm,
    parse_terms,
    parse_weighted_terms,
)
from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.framework.hostports import HostPort, pod_host_ports
from secondary_scheduler.framework.labels import LabelSelector
from secondary_scheduler.framework.nodeselector import (
    PreferredTerm,
    RequiredNodeAffinity,
    parse_preferred_terms,
)
from secondary_scheduler.framework.podrequests import requests_and_non_zero
from secondary_scheduler.framework.taints import Toleration

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A topology spread constraint with its defaults applied and matchLabelKeys folded into the selector."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @classmethod
    def parse(cls, raw: Mapping[str, Any], pod_labels: Mapping[str, str]) -> SpreadConstraint:
        own_values = {key: pod_labels[key] for key in raw.get("matchLabelKeys") or () if key in pod_labels}
        return cls(
            max_skew=int(raw.get("maxSkew") or 0),
            topology_key=str(raw.get("topologyKey", "")),
            when_unsatisfiable=str(raw.get("whenUnsatisfiable", "")),
            selector=LabelSelector.parse(raw.get("labelSelector")).and_labels(own_values),
            min_domains=int(raw.get("minDomains") or 1),
            node_affinity_policy=str(raw.get("nodeAffinityPolicy") or HONOR),
            node_taints_policy=str(raw.get("nodeTaintsPolicy") or IGNORE),
        )


@dataclass(frozen=True, slots=True, eq=False)
class PodInfo:
    obj: KubeObject
    """The pod as it came from the API (for the binder, events and anything not parsed here)."""
    namespace: str
    name: str
    uid: str
    key: str
    """``namespace/name``: how the NodeTable and the queue identify the pod."""
    priority: int
    scheduler_name: str
    creation_timestamp: str
    labels: Mapping[str, str]
    node_name: str
    """``spec.nodeName``: set once the pod is bound (or when its author pinned it)."""
    requests: Mapping[str, int]
    non_zero_cpu: int
    non_zero_memory: int
    host_ports: tuple[HostPort, ...]
    tolerations: tuple[Toleration, ...]
    required_node_affinity: RequiredNodeAffinity
    preferred_node_affinity: tuple[PreferredTerm, ...]
    spread_constraints: tuple[SpreadConstraint, ...]
    required_affinity_terms: tuple[AffinityTerm, ...]
    required_anti_affinity_terms: tuple[AffinityTerm, ...]
    preferred_affinity_terms: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity_terms: tuple[WeightedAffinityTerm, ...]
    scheduling_gates: tuple[str, ...]
    images: tuple[str, ...]
    """Images of init and regular containers, in pod order."""
    preemption_policy: str
    terminating: bool
    """Has a deletionTimestamp: topology spreading stops counting it."""

    @classmethod
    def from_pod(cls, pod: KubeObject) -> PodInfo:
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        namespace = str(metadata.get("namespace") or "default")
        name = str(metadata.get("name", ""))
        labels = {str(key): str(value) for key, value in (metadata.get("labels") or {}).items()}
        affinity = spec.get("affinity") or {}
        pod_affinity = affinity.get("podAffinity") or {}
        pod_anti_affinity = affinity.get("podAntiAffinity") or {}
        node_affinity = affinity.get("nodeAffinity") or {}
        status = pod.get("status")
        requests, (non_zero_cpu, non_zero_memory) = requests_and_non_zero(spec, status)
        containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
        return cls(
            obj=pod,
            namespace=namespace,
            name=name,
            uid=str(metadata.get("uid", "")),
            key=f"{namespace}/{name}",
            priority=int(spec.get("priority") or 0),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            creation_timestamp=str(metadata.get("creationTimestamp") or ""),
            labels=labels,
            node_name=str(spec.get("nodeName") or ""),
            requests=requests,
            non_zero_cpu=non_zero_cpu,
            non_zero_memory=non_zero_memory,
            host_ports=pod_host_ports(spec),
            tolerations=tuple(Toleration.parse(item) for item in spec.get("tolerations") or ()),
            required_node_affinity=RequiredNodeAffinity.parse(spec),
            preferred_node_affinity=parse_preferred_terms(
                node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
            ),
            spread_constraints=tuple(
                SpreadConstraint.parse(item, labels) for item in spec.get("topologySpreadConstraints") or ()
            ),
            required_affinity_terms=parse_terms(
                pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), namespace
            ),
            required_anti_affinity_terms=parse_terms(
                pod_anti_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), namespace
            ),
            preferred_affinity_terms=parse_weighted_terms(
                pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), namespace
            ),
            preferred_anti_affinity_terms=parse_weighted_terms(
                pod_anti_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), namespace
            ),
            scheduling_gates=tuple(str(gate.get("name", "")) for gate in spec.get("schedulingGates") or ()),
            images=tuple(str(container.get("image", "")) for container in containers),
            preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
            terminating=metadata.get("deletionTimestamp") is not None,
        )

    @property
    def has_pod_affinity(self) -> bool:
        """Has any inter-pod (anti-)affinity term: such pods are indexed for InterPodAffinity."""
        return bool(
            self.required_affinity_terms
            or self.required_anti_affinity_terms
            or self.preferred_affinity_terms
            or self.preferred_anti_affinity_terms
        )
