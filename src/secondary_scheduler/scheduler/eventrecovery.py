"""Scheduled Events that a killed predecessor left unwritten, written by the next leader.

A scheduler killed under load (kill -9, OOM, its node lost) dies with Bindings still at the API
server and Scheduled Events not yet written: the API server completes those Bindings after the
death, and no process is left to say so. kube-scheduler leaves it there, and `kubectl describe`
shows no Scheduled Event for those pods. Here the replica that leads next (or the same one,
restarted) knows from its pod informer, which runs before and during the election, which pods
its profiles' names were bound for in the minutes before it led. It lists the Scheduled Events
of their namespaces once and writes the missing ones, in the words the binding cycle uses.

Which pods: a pod of one of our profiles, bound by a Binding (the PodScheduled condition turned
True within ``RECOVERY_WINDOW`` seconds before leading), whose ``spec.nodeName`` no client wrote
itself (a pod created on a node names ``nodeName`` in its managedFields; a Binding writes past the
field manager, so a bound pod does not). Pods bound after leading are this process's own. The
Events are listed ``PREDECESSOR_WRITES_SECONDS`` after leading, so that a predecessor's last
writes have landed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.kube.client import JSON, ApiClient, ApiError
from secondary_scheduler.kube.podphase import scheduled_at
from secondary_scheduler.scheduler.events import SCHEDULED, SchedulerEvents

log = logging.getLogger(__name__)

RECOVERY_WINDOW = 300.0
"""Seconds before leading in which a binding may still lack its Event: a replica's takeover after
a lease expires (15 s by default) or a restart by the kubelet (10 s, up to 5 minutes in a crash
loop's backoff), and far inside the API server's Event TTL (1 hour by default), so that an Event
already expired is never written again."""

PREDECESSOR_WRITES_SECONDS = 5.0
"""How long after leading the Events are listed. A predecessor that lost its lease drops what it
has queued (``Scheduler.abandon_in_flight``), but writes it had sent may still land: within
milliseconds, or as soon as a stopped API server resumes (and a stopped server is what often
costs a lease). Listing earlier could miss such an Event and write a second one."""


@dataclass(frozen=True)
class BoundPod:
    """What a Scheduled Event says of a pod (it satisfies ``PodReference``), and when it was bound."""

    namespace: str
    name: str
    uid: str
    node: str
    scheduler_name: str
    bound_at: float


class RecentlyBound:
    """A pod-watch handler: the pods of our profiles bound by a Binding in the last window.

    Kept by uid in the order the watch saw them bound, so that the oldest are dropped from the
    front; after ``take`` it keeps nothing (bindings from then on are this process's own).
    """

    def __init__(
        self,
        scheduler_names: Collection[str],
        window: float = RECOVERY_WINDOW,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.scheduler_names = frozenset(scheduler_names)
        self.window = window
        self.clock = clock
        self.pods: dict[str, BoundPod] = {}
        self.taken = False

    def replace(self, items: list[JSON]) -> None:
        if self.taken:
            return
        self.pods = {}
        for item in items:
            self.event("ADDED", item)

    def event(self, kind: str, obj: JSON) -> None:
        if self.taken:
            return
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        bound = None if kind == "DELETED" else bound_by_binding(obj, self.scheduler_names)
        if bound is None:
            self.pods.pop(uid, None)
            return
        since = self.clock() - self.window
        if uid not in self.pods and bound.bound_at >= since:  # a list brings every bound pod
            self.pods[uid] = bound
            self._forget_older_than(since)

    def take(self) -> list[BoundPod]:
        """The pods bound within the window before now; observing stops here."""
        since = self.clock() - self.window
        pods = [pod for pod in self.pods.values() if pod.bound_at >= since]
        self.pods = {}
        self.taken = True
        return pods

    def _forget_older_than(self, since: float) -> None:
        while self.pods:
            uid, oldest = next(iter(self.pods.items()))
            if oldest.bound_at >= since:
                return
            del self.pods[uid]


def bound_by_binding(pod: JSON, scheduler_names: frozenset[str]) -> BoundPod | None:
    """The pod as a BoundPod if a Binding put one of our profiles' pods on its node, else None."""
    spec = pod.get("spec") or {}
    node = spec.get("nodeName")
    if not node or (spec.get("schedulerName") or "default-scheduler") not in scheduler_names:
        return None
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp") or _node_name_written_by_a_client(meta):
        return None
    bound_at = scheduled_at(pod)
    if bound_at is None:
        return None
    return BoundPod(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        node=str(node),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        bound_at=bound_at,
    )


def _node_name_written_by_a_client(meta: dict[str, Any]) -> bool:
    for entry in meta.get("managedFields") or ():
        fields = entry.get("fieldsV1") or {}
        if "f:nodeName" in (fields.get("f:spec") or {}):
            return True
    return False


async def write_missing_events(
    api: ApiClient, pods: list[BoundPod], events: SchedulerEvents, window: float = RECOVERY_WINDOW
) -> int:
    """Write a Scheduled Event for each of ``pods`` that has none; how many were written.

    One list of Scheduled Events per namespace the pods are in. A scheduler bound only to
    system:kube-scheduler may not list Events: that is said once, and nothing is written.
    """
    if not pods:
        return 0
    by_namespace: dict[str, list[BoundPod]] = {}
    for pod in pods:
        by_namespace.setdefault(pod.namespace, []).append(pod)
    written = 0
    for namespace, members in by_namespace.items():
        path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        try:
            listed = await api.list_all(path, {"fieldSelector": f"reason={SCHEDULED}"})
        except ApiError as error:
            hint = (
                " (grant list on events.k8s.io events: the operator's secondary-scheduler-plugins "
                "ClusterRole does)"
                if error.status == 403
                else ""
            )
            log.warning(
                "not writing the Scheduled Events a previous leader may have left unwritten for "
                "%d pods: listing Events in %s: %s%s",
                len(pods),
                namespace,
                error,
                hint,
            )
            return written
        recorded = {str((event.get("regarding") or {}).get("uid", "")) for event in listed["items"]}
        for pod in members:
            if pod.uid not in recorded:
                events.scheduled(pod, pod.scheduler_name, pod.node)
                written += 1
    if written:
        log.info(
            "wrote %d Scheduled Events a previous leader left unwritten (of %d pods bound in the "
            "%.0f s before this replica led)",
            written,
            len(pods),
            window,
        )
    return written
