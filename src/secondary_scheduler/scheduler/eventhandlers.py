"""Node and pod watch events -> the NodeTable, the scheduling queue and the assumed pods.

Nodes and assigned pods go into the NodeTable (the column-wise state plugins read);
unassigned pods for one of our profiles go into the scheduling queue (or wait as gated
while a PreEnqueue plugin keeps them out). Events that may let an unschedulable pod fit
(a node added or changed in a way scheduling reads, an assigned pod gone) move the
unschedulable pods back to the queue, as kube-scheduler's event handlers do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.runtime import Framework
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.store import object_key
from secondary_scheduler.scheduler.assumed import AssumedPods
from secondary_scheduler.scheduler.queue import SchedulingQueue

log = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def _node_signature(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """The fields of a Node whose change can make a pending pod fit (heartbeats change none of them)."""
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


@dataclass(frozen=True)
class _Handler:
    """A Reflector's handler made of two callables (kube.reflector.WatchHandler)."""

    replace: Callable[[list[JSON]], None]
    event: Callable[[str, JSON], None]


class EventHandlers:
    def __init__(
        self,
        table: NodeTable,
        queue: SchedulingQueue[PodInfo],
        frameworks: Mapping[str, Framework],
        assumed: AssumedPods,
    ) -> None:
        self.table = table
        self.queue = queue
        self.frameworks = frameworks
        self.assumed = assumed
        self.gated: dict[str, PodInfo] = {}
        """Our pods that PreEnqueue keeps out of the queue (scheduling gates)."""
        self.nodes = _Handler(self.replace_nodes, self.node_event)
        self.pods = _Handler(self.replace_pods, self.pod_event)

    # -- pods ------------------------------------------------------------------------------
    def pod_event(self, kind: str, pod: JSON) -> None:
        key = object_key(pod)
        if kind == "DELETED":
            self._pod_gone(key)
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self._assigned_pod(key, node, pod)
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

    def _assigned_pod(self, key: str, node: str, pod: JSON) -> None:
        self.queue.delete(key)
        self.gated.pop(key, None)
        if _is_terminal(pod):
            self._pod_gone(key)
            return
        confirmed = self.assumed.confirm(key)
        if self.table.node_of_pod(key) != node or confirmed or self._labels_changed(key, pod):
            self.table.add_pod(PodInfo.from_pod(pod), node)

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
        self.assumed.drop(key)
        if self.table.remove_pod(key) is not None:
            self.queue.move_all_to_active_or_backoff("AssignedPodDelete")

    def replace_pods(self, items: list[JSON]) -> None:
        """After a (re)list: drop what is gone, keep assumed pods still in flight, add the rest."""
        listed = {object_key(item) for item in items}
        for _, slot in list(self.table.all_pods()):
            for key in list(self.table.pods[slot]):
                if key not in listed and not self.assumed.still_in_flight(key):
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
