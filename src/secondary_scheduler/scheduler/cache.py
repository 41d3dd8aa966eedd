"""The scheduler's view of the cluster, kept current from list+watch of nodes and pods.

Nodes and assigned pods go into the NodeTable (the column-wise state plugins read);
unassigned pods for one of our profiles go into the scheduling queue. Pods we have
assumed onto a node (decided, binding in flight or not yet seen bound) stay counted on
that node until the watch confirms them or the bind fails, so the next cycles never
double-book the room they take, even across a relist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.runtime import Framework
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.store import object_key

from .queue import SchedulingQueue

log = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# Fields of a Node whose change can make a pending pod fit (heartbeats change none of them).
_NODE_FIELDS_THAT_MATTER = ("allocatable", "labels", "taints", "unschedulable")
ASSUMED_GRACE_SECONDS = 30.0


def _node_signature(node: Mapping[str, Any]) -> tuple[Any, ...]:
    spec = node.get("spec") or {}
    return (
        (node.get("status") or {}).get("allocatable"),
        (node.get("metadata") or {}).get("labels"),
        spec.get("taints"),
        spec.get("unschedulable"),
    )


def _same_for_scheduling(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether an update changed nothing a scheduling decision reads (kube-scheduler's isPodUpdated).

    Status-only updates (including the PodScheduled condition we write ourselves) must not
    give an unschedulable pod another immediate try.
    """
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old.get("spec") == new.get("spec")
        and old_meta.get("labels") == new_meta.get("labels")
        and old_meta.get("annotations") == new_meta.get("annotations")
    )


def _is_terminal(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


class SchedulerCache:
    """Feeds NodeTable and SchedulingQueue from two Reflectors (it is their WatchHandler)."""

    def __init__(
        self,
        table: NodeTable,
        queue: SchedulingQueue[PodInfo],
        frameworks: Mapping[str, Framework],
        on_pod_assigned: Callable[[PodInfo], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = table
        self.queue = queue
        self.frameworks = frameworks
        self.nodes = _NodeHandler(self)
        self.pods = _PodHandler(self)
        self.assumed: dict[str, tuple[str, float | None]] = {}
        """pod key -> (node, when the bind finished or None while it is in flight)."""
        self.gated: dict[str, PodInfo] = {}
        """Our pods that PreEnqueue keeps out of the queue (scheduling gates)."""
        self._on_pod_assigned = on_pod_assigned
        self._clock = clock

    # -- assumed pods (called by the scheduling loop) ------------------------------------
    def assume(self, pod: PodInfo, node: str) -> None:
        self.table.add_pod(pod, node)
        self.assumed[pod.key] = (node, None)

    def finish_binding(self, pod: PodInfo) -> None:
        if pod.key in self.assumed:
            self.assumed[pod.key] = (self.assumed[pod.key][0], self._clock())

    def forget(self, pod: PodInfo) -> None:
        """The bind failed: give the node its room back."""
        if self.assumed.pop(pod.key, None) is not None:
            self.table.remove_pod(pod.key)

    def _keep_assumed(self, key: str) -> bool:
        entry = self.assumed.get(key)
        if entry is None:
            return False
        finished = entry[1]
        return finished is None or self._clock() - finished < ASSUMED_GRACE_SECONDS

    # -- pods ------------------------------------------------------------------------------
    def pod_event(self, kind: str, pod: JSON) -> None:
        key = object_key(pod)
        if kind == "DELETED":
            self._pod_gone(key)
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self.queue.delete(key)
            self.gated.pop(key, None)
            if _is_terminal(pod):
                self._pod_gone(key)
                return
            confirmed = self.assumed.pop(key, None) is not None
            if self.table.node_of_pod(key) != node or confirmed or self._labels_changed(key, pod):
                info = PodInfo.from_pod(pod)
                self.table.add_pod(info, node)
                if confirmed and self._on_pod_assigned is not None:
                    self._on_pod_assigned(info)
            return
        if key in self.assumed or _is_terminal(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        scheduler_name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        framework = self.frameworks.get(scheduler_name)
        if framework is None:
            return
        queued = self.queue.get(key)
        if queued is not None and _same_for_scheduling(queued.obj, pod):
            return
        info = PodInfo.from_pod(pod)
        if not framework.run_pre_enqueue(info).is_success:
            self.gated[key] = info
            self.queue.delete(key)
            return
        self.gated.pop(key, None)
        self.queue.add(info)

    def _labels_changed(self, key: str, pod: JSON) -> bool:
        node = self.table.node_of_pod(key)
        slot = self.table.slot_of(node) if node else None
        if slot is None:
            return True
        current = self.table.pods[slot].get(key)
        return current is None or dict(current.labels) != ((pod.get("metadata") or {}).get("labels") or {})

    def _pod_gone(self, key: str) -> None:
        self.queue.delete(key)
        self.gated.pop(key, None)
        self.assumed.pop(key, None)
        if self.table.remove_pod(key) is not None:
            self.queue.move_all_to_active_or_backoff("AssignedPodDelete")

    def replace_pods(self, items: list[JSON]) -> None:
        """After a (re)list: drop what is gone, keep assumed pods still in flight, add the rest."""
        listed = {object_key(item) for item in items}
        for _, slot in list(self.table.all_pods()):
            for key in list(self.table.pods[slot]):
                if key not in listed and not self._keep_assumed(key):
                    self._pod_gone(key)
        for key in list(self.gated):
            if key not in listed:
                self.gated.pop(key)
        for item in items:
            self.pod_event("ADDED", item)

    # -- nodes -----------------------------------------------------------------------------
    def node_event(self, kind: str, node: JSON) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        if kind == "DELETED":
            self.table.remove_node(name)
            return
        slot = self.table.slot_of(name)
        previous = self.table.objects[slot] if slot is not None else None
        self.table.add_node(node)
        if previous is None or _node_signature(previous) != _node_signature(node):
            self.queue.move_all_to_active_or_backoff("NodeAdd" if previous is None else "NodeUpdate")

    def replace_nodes(self, items: list[JSON]) -> None:
        listed = {(item.get("metadata") or {}).get("name") for item in items}
        for slot in self.table.active_slots().tolist():
            if self.table.names[slot] not in listed:
                self.table.remove_node(self.table.names[slot])
        for item in items:
            self.node_event("ADDED", item)


class _NodeHandler:
    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache

    def replace(self, items: list[JSON]) -> None:
        self.cache.replace_nodes(items)

    def event(self, kind: str, obj: JSON) -> None:
        self.cache.node_event(kind, obj)


class _PodHandler:
    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache

    def replace(self, items: list[JSON]) -> None:
        self.cache.replace_pods(items)

    def event(self, kind: str, obj: JSON) -> None:
        self.cache.pod_event(kind, obj)
