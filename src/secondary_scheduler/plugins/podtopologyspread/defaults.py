"""Default spread constraints for pods that set none, as kube-scheduler derives them.

With ``defaultingType: System`` (the default) every pod without its own constraints is
spread softly by hostname (maxSkew 3) and zone (maxSkew 5); with ``List`` the args'
``defaultConstraints`` apply, DoNotSchedule ones included. Either way the constraints
count the pods that the pod's Services, and its controlling ReplicationController,
ReplicaSet or StatefulSet, select; a pod that none of them selects is not spread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import (
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    Informer,
)
from secondary_scheduler.framework.labels import LabelSelector
from secondary_scheduler.framework.podinfo import HONOR, IGNORE, SCHEDULE_ANYWAY, PodInfo, SpreadConstraint
from secondary_scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULTS: tuple[tuple[str, int], ...] = ((HOSTNAME, 3), (ZONE, 5))
"""(topologyKey, maxSkew) of kube-scheduler's system default constraints, all ScheduleAnyway."""


class DefaultConstraints:
    """The constraints a pod without its own gets; reads Services and controllers from informers."""

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        self.system_defaulted = args.defaulting_type == "System"
        if self.system_defaulted:
            self._templates: list[dict[str, Any]] = [
                {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": SCHEDULE_ANYWAY}
                for key, skew in SYSTEM_DEFAULTS
            ]
        else:
            self._templates = [
                item.model_dump(by_alias=True, exclude_none=True) for item in args.default_constraints
            ]
        self._services: Informer | None = None
        self._owners: dict[str, Informer] = {}
        if self._templates:
            self._services = handle.informer(SERVICES)
            self._owners = {
                "v1/ReplicationController": handle.informer(REPLICATION_CONTROLLERS),
                "apps/v1/ReplicaSet": handle.informer(REPLICA_SETS),
                "apps/v1/StatefulSet": handle.informer(STATEFUL_SETS),
            }

    def for_pod(self, pod: PodInfo, action: str) -> list[SpreadConstraint]:
        """The default constraints with ``whenUnsatisfiable == action``, or none."""
        templates = [item for item in self._templates if item["whenUnsatisfiable"] == action]
        if not templates:
            return []
        selector = self.selector(pod)
        if selector.is_empty:
            return []
        return [
            SpreadConstraint(
                max_skew=int(item["maxSkew"]),
                topology_key=str(item["topologyKey"]),
                when_unsatisfiable=action,
                selector=selector,
                min_domains=int(item.get("minDomains") or 1),
                node_affinity_policy=str(item.get("nodeAffinityPolicy") or HONOR),
                node_taints_policy=str(item.get("nodeTaintsPolicy") or IGNORE),
            )
            for item in templates
        ]

    def selector(self, pod: PodInfo) -> LabelSelector:
        """What the pod's Services and controller select (upstream's helper.DefaultSelector)."""
        labels: dict[str, str] = {}
        for service in self._services.list(pod.namespace) if self._services is not None else ():
            wanted = (service.get("spec") or {}).get("selector")
            if wanted is not None and all(pod.labels.get(key) == value for key, value in wanted.items()):
                labels.update(wanted)
        selector = LabelSelector().and_labels(labels)
        owner = _controller(pod.obj.get("metadata") or {})
        if owner is None:
            return selector
        informer = self._owners.get(f"{owner.get('apiVersion')}/{owner.get('kind')}")
        found = informer.get(str(owner.get("name", "")), pod.namespace) if informer is not None else None
        if found is None:
            return selector
        spec = found.get("spec") or {}
        if owner.get("kind") == "ReplicationController":
            return LabelSelector().and_labels({**labels, **(spec.get("selector") or {})})
        owned = LabelSelector.parse(spec.get("selector"))
        return selector if owned.selects_nothing else owned.and_labels(labels)


def _controller(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    references: Sequence[Mapping[str, Any]] = metadata.get("ownerReferences") or ()
    return next((reference for reference in references if reference.get("controller")), None)
