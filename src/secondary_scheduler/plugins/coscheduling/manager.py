"""The PodGroup bookkeeping behind Coscheduling (upstream's ``coscheduling/core`` PodGroupManager).

It keeps, per gang (``namespace/group``):

- the gang's pods, from the scheduler's pod watch (unfinished pods of every scheduler, as
  kube-scheduler's pod informer has them): PreFilter counts them against ``minMember``;
- the pods *assigned* to a node: added at Permit and for pods that arrive already bound,
  removed at Unreserve and when a bound pod goes away. Permit lets the gang go once
  ``minMember`` are assigned;
- the gangs whose ``minResources`` were found to fit the cluster lately (``permitted``, so
  the check runs once per gang, not once per pod), the gangs backed off after a failure
  (``backed_off``), and when each gang last failed (queue order: a gang that just failed
  goes behind the others instead of blocking the head of the queue).

Everything here is synchronous and in memory; the plugin calls it from its extension points.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import PODS
from secondary_scheduler.kube.quantity import format_bytes, format_cpu
from secondary_scheduler.kube.store import object_key
from secondary_scheduler.plugins.coscheduling.expiring import ExpiringKeys
from secondary_scheduler.plugins.coscheduling.podgroup import (
    POD_GROUP_LABEL,
    PodGroup,
    full_name,
    group_label,
)

log = logging.getLogger(__name__)

PERMITTED_DEFAULT_TTL = 3.0
"""go-cache's default expiration of upstream's permittedPG (used when the timeout is 0)."""
BACKOFF_DEFAULT_TTL = 10.0
"""go-cache's default expiration of upstream's backedOffPG."""


class PermitOutcome(Enum):
    """What Permit decides for a pod (upstream's core.Status)."""

    NOT_SPECIFIED = "PodGroup not specified"
    NOT_FOUND = "PodGroup not found"
    SUCCESS = "Success"
    WAIT = "Wait"


class PodGroupError(Exception):
    """A PodGroup the plugin cannot read (a spec the CRD's schema should have refused)."""


class PodGroupManager:
    def __init__(
        self,
        podgroups: Informer,
        *,
        permit_timeout: float,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
    ) -> None:
        """``permit_timeout``: permitWaitingTimeSeconds, also how long a minResources check holds."""
        self.podgroups = podgroups
        self.permit_timeout = permit_timeout
        self.wall_clock = wall_clock
        self.permitted = ExpiringKeys(clock, PERMITTED_DEFAULT_TTL)
        self.backed_off = ExpiringKeys(clock, BACKOFF_DEFAULT_TTL)
        self.last_failed: dict[str, float] = {}
        """Gang -> wall-clock seconds of its last failed attempt."""
        self.assigned: dict[str, set[str]] = {}
        """Gang -> names of its pods assumed or bound."""
        self._pods: dict[str, dict[str, PodInfo]] = defaultdict(dict)
        """Gang -> pod key -> the pod (unfinished pods carrying the label)."""
        self._gang_of: dict[str, str] = {}
        """Pod key -> its gang, for the pods in ``_pods``."""
        self._parsed: dict[str, tuple[object, PodGroup]] = {}

    # -- PodGroups -------------------------------------------------------------------------
    def get_pod_group(self, pod: PodInfo) -> tuple[str, PodGroup | None]:
        """(``namespace/group``, the PodGroup) of the pod; ("", None) without the label.

        Raises PodGroupError when the PodGroup exists but cannot be read.
        """
        group = group_label(pod.labels)
        if not group:
            return "", None
        gang = full_name(pod.namespace, group)
        obj = self.podgroups.get(group, pod.namespace)
        if obj is None:
            self._parsed.pop(gang, None)
            return gang, None
        cached = self._parsed.get(gang)
        if cached is not None and cached[0] is obj:
            return gang, cached[1]
        try:
            parsed = PodGroup.from_object(obj)
        except ValueError as error:
            raise PodGroupError(str(error)) from error
        self._parsed[gang] = (obj, parsed)
        return gang, parsed

    def creation_timestamp(self, pod: PodInfo, default: float) -> float:
        """When the pod's gang counts as created for queue order (upstream's GetCreationTimestamp).

        A gang that failed lately counts from its failure; else from its PodGroup's
        creation; a pod without a gang (or without its PodGroup) from ``default``.
        """
        group = group_label(pod.labels)
        if not group:
            return default
        gang = full_name(pod.namespace, group)
        failed = self.last_failed.get(gang)
        if failed is not None:
            return failed
        obj = self.podgroups.get(group, pod.namespace)
        if obj is None:
            return default
        try:
            created = self.get_pod_group(pod)[1]
        except PodGroupError:
            return default
        return created.created if created is not None and created.created is not None else default

    # -- the gang's pods (a WatchHandler on the scheduler's pod watch) ---------------------
    def pods_of(self, gang: str) -> list[PodInfo]:
        return list(self._pods.get(gang, {}).values())

    def replace(self, items: list[dict[str, Any]]) -> None:
        listed = {object_key(item) for item in items}
        for key in [key for key in self._gang_of if key not in listed]:
            self._forget(key)
        for item in items:
            self.event("ADDED" if object_key(item) not in self._gang_of else "MODIFIED", item)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        metadata: Mapping[str, Any] = obj.get("metadata") or {}
        node = (obj.get("spec") or {}).get("nodeName")
        if kind == "DELETED":
            pod = self._forget(key)
            if node and pod is not None:
                self.unreserve(pod)
            elif node:
                self.unreserve(PodInfo.from_pod(obj))
            return
        group = str((metadata.get("labels") or {}).get(POD_GROUP_LABEL, ""))
        if not group:
            self._forget(key)
            return
        pod = PodInfo.from_pod(obj)
        gang = full_name(pod.namespace, group)
        previous = self._gang_of.get(key)
        if previous is not None and previous != gang:
            self._forget(key)
        self._pods[gang][key] = pod
        self._gang_of[key] = gang
        if kind == "ADDED" and node:
            # A pod that arrives bound (a restart, another scheduler) counts as assigned.
            self.assigned.setdefault(gang, set()).add(pod.name)

    def _forget(self, key: str) -> PodInfo | None:
        gang = self._gang_of.pop(key, None)
        if gang is None:
            return None
        pods = self._pods[gang]
        pod = pods.pop(key, None)
        if not pods:
            del self._pods[gang]
        return pod

    # -- the extension points' rules ---------------------------------------------------------
    def assigned_count(self, gang: str) -> int:
        return len(self.assigned.get(gang, ()))

    def pre_filter(self, pod: PodInfo, table: NodeTable, extra_pods: Iterable[PodInfo] = ()) -> str | None:
        """Why the pod's gang cannot be scheduled now (None: go on). Upstream's core PreFilter.

        ``extra_pods``: gang members the pod watch does not show (``secsched score``).
        """
        gang, pg = self.get_pod_group(pod)
        if pg is None:
            return None
        if gang in self.backed_off:
            return f"podGroup {gang} failed recently"
        pods = {member.key: member for member in self.pods_of(gang)}
        for member in extra_pods:
            pods.setdefault(member.key, member)
        quorum_gap = pg.min_member - len(pods)
        if quorum_gap > 0:
            return (
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {len(pods)}, minMember of group: {pg.min_member}"
            )
        for member in pods.values():
            if member.scheduling_gates:
                quorum_gap += 1
            if quorum_gap > 0:
                return f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
        if pg.min_resources is None or gang in self.permitted:
            return None
        request = dict(pg.min_resources)
        request[PODS] = pg.min_member
        gap = check_cluster_resource(table, request, pod.namespace, pg.name)
        if gap is not None:
            return gap
        self.permitted.add(gang, self.permit_timeout)
        return None

    def permit(self, pod: PodInfo) -> tuple[PermitOutcome, bool]:
        """(the outcome, whether this is the gang's first assigned pod: it activates its siblings)."""
        gang, pg = self.get_pod_group(pod)
        if not gang:
            return PermitOutcome.NOT_SPECIFIED, False
        if pg is None:
            return PermitOutcome.NOT_FOUND, False
        assigned = self.assigned.setdefault(gang, set())
        assigned.add(pod.name)
        if len(assigned) >= pg.min_member:
            return PermitOutcome.SUCCESS, False
        return PermitOutcome.WAIT, len(assigned) == 1

    def unreserve(self, pod: PodInfo) -> None:
        """The pod is no longer assigned (its scheduling failed, or it was bound and is gone)."""
        gang = full_name(pod.namespace, group_label(pod.labels))
        assigned = self.assigned.get(gang)
        if assigned is None:
            return
        assigned.discard(pod.name)
        if not assigned:
            del self.assigned[gang]

    def backoff(self, gang: str, seconds: float) -> None:
        if seconds > 0:
            self.backed_off.add(gang, seconds)

    def mark_failure(self, gang: str) -> None:
        self.last_failed[gang] = self.wall_clock()

    def clear_failure(self, gang: str) -> None:
        self.last_failed.pop(gang, None)


def check_cluster_resource(
    table: NodeTable, request: Mapping[str, int], namespace: str, group: str
) -> str | None:
    """Whether the nodes' free room, summed node by node, covers ``request`` (None) or the gap left.

    Upstream's CheckClusterResource: the gang's own pods on a node count as free room (they
    are the gang's), ``pods`` is the number of pods a node still accepts, and a resource is
    satisfied once the running sum reaches it (later nodes are not counted for it).
    """
    own_by_slot: dict[int, list[PodInfo]] = defaultdict(list)
    for member, slot in table.pods_in_namespace(namespace):
        if group_label(member.labels) == group:
            own_by_slot[slot].append(member)
    remaining = {name: value for name, value in request.items()}
    columns = {name: table.resources.column(name) for name in remaining}
    pods_column = table.resources.column(PODS)
    for slot in table.node_order().tolist():
        if not remaining:
            break
        own = own_by_slot.get(slot, [])
        for name in list(remaining):
            if name == PODS:
                allowed = int(table.allocatable[slot, pods_column]) if pods_column is not None else 0
                free = allowed - (int(table.pod_count[slot]) - len(own))
            else:
                column = columns[name]
                if column is None:
                    free = 0
                else:
                    free = int(table.allocatable[slot, column] - table.requested[slot, column])
                    free += sum(member.requests.get(name, 0) for member in own)
            remaining[name] -= free
            if remaining[name] <= 0:
                del remaining[name]
    if not remaining:
        return None
    shown = " ".join(f"{name}:{_format(name, value)}" for name, value in sorted(remaining.items()))
    return f"resource gap: map[{shown}]"


def _format(name: str, value: int) -> str:
    if name == "cpu":
        return format_cpu(value)
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return format_bytes(value)
    return str(value)
