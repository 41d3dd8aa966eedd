"""Node and pod watch events -> the NodeTable, the scheduling queue and the assumed pods.

Nodes and assigned pods go into the NodeTable (the column-wise state plugins read);
unassigned pods for one of our profiles go into the scheduling queue (which holds them as
gated while a PreEnqueue plugin keeps them out). Events that may let an unschedulable pod fit
(a node added or changed in a way scheduling reads, an assigned pod added, relabelled,
scaled down or gone) are handed to ``on_event``, which moves back the unschedulable pods
they can help (see ``framework.events``), as kube-scheduler's event handlers do.

An assigned pod is parsed again when what the scheduler counts of it changes: labels,
requests (an in-place resize), or a deletionTimestamp (topology spreading stops counting a
terminating pod); status-only updates from the kubelet cost a few dict lookups.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    node_update_actions,
    pod_update_actions,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.runtime import Framework
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.podphase import is_terminal
from secondary_scheduler.kube.store import object_key
from secondary_scheduler.scheduler.assumed import AssumedPods
from secondary_scheduler.scheduler.queue import SchedulingQueue

log = logging.getLogger(__name__)


def _same_for_scheduling(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether an update changed nothing a scheduling decision reads (kube-scheduler's isPodUpdated).

    Status-only updates (including the PodScheduled condition we write ourselves) must not
    give an unschedulable pod another immediate try; ``status.resourceClaimStatuses`` counts, as
    upstream's: the claim generated from a template is found through it (DynamicResources).
    """
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old.get("spec") == new.get("spec")
        and old_meta.get("labels") == new_meta.get("labels")
        and old_meta.get("annotations") == new_meta.get("annotations")
        and (old.get("status") or {}).get("resourceClaimStatuses")
        == (new.get("status") or {}).get("resourceClaimStatuses")
    )


def _accounting_signature(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the NodeTable's count of an assigned pod depends on, besides its node."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    return (
        metadata.get("labels"),
        metadata.get("deletionTimestamp") is not None,
        [container.get("resources") for container in spec.get("containers") or ()],
        [container.get("resources") for container in spec.get("initContainers") or ()],
        spec.get("resources"),
        [  # only statuses that report resources count (podrequests): the kubelet's first
            # status update adds containerStatuses, which alone must not cost a new parse
            (item.get("name"), item.get("resources"), item.get("allocatedResources"))
            for field in ("containerStatuses", "initContainerStatuses")
            for item in status.get(field) or ()
            if item.get("resources")
        ],
        [c for c in status.get("conditions") or () if c.get("type") == "PodResizePending"],
    )


EventSink = Callable[[ClusterEvent, Any, Any], None]


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
        on_event: EventSink | None = None,
        on_deleted: Callable[[str], None] | None = None,
    ) -> None:
        """``on_event(event, old, new)`` hears every cluster event that may help a waiting pod;
        ``on_deleted(uid)`` every pod deleted (a pod held at Permit must stop waiting)."""
        self.table = table
        self.queue = queue
        self.frameworks = frameworks
        self.assumed = assumed
        self._on_event = on_event or (
            lambda event, old, new: queue.move_all_to_active_or_backoff(event.label)
        )
        self._on_deleted = on_deleted
        self.nodes = _Handler(self.replace_nodes, self.node_event)
        self.pods = _Handler(self.replace_pods, self.pod_event)

    # -- pods ------------------------------------------------------------------------------
    def pod_event(self, kind: str, pod: JSON) -> None:
        key = object_key(pod)
        if kind == "DELETED":
            self._pod_gone(key)
            if self._on_deleted is not None:
                self._on_deleted(str((pod.get("metadata") or {}).get("uid", "")))
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self._assigned_pod(key, node, pod)
            return
        if key in self.assumed or is_terminal(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        scheduler_name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        framework = self.frameworks.get(scheduler_name)
        if framework is None:
            return
        queued = self.queue.get(key)
        if queued is not None and _same_for_scheduling(queued.obj, pod):
            self.queue.refresh(PodInfo.from_pod(pod))
            return
        info = PodInfo.from_pod(pod)
        gated = framework.run_pre_enqueue(info)
        if not gated.is_success:
            self.queue.hold(info, gated.plugin)
            return
        self.queue.add(info)

    def _assigned_pod(self, key: str, node: str, pod: JSON) -> None:
        self.queue.delete(key)
        if is_terminal(pod):
            self._pod_gone(key)
            return
        confirmed = self.assumed.confirm(key)
        previous = self._counted(key)
        if previous is None or confirmed or self.table.node_of_pod(key) != node:
            info = PodInfo.from_pod(pod)
            self.table.add_pod(info, node)
            self._on_event(ClusterEvent(POD, ActionType.ADD), None, info)
            return
        if _accounting_signature(previous.obj) == _accounting_signature(pod):
            return
        info = PodInfo.from_pod(pod)
        self.table.add_pod(info, node)
        actions = pod_update_actions(previous, info)
        if actions:
            self._on_event(ClusterEvent(POD, actions), previous, info)

    def _counted(self, key: str) -> PodInfo | None:
        """The pod as the table counts it now (None if not counted, or waiting for its node)."""
        node = self.table.node_of_pod(key)
        slot = self.table.slot_of(node) if node else None
        return self.table.pods[slot].get(key) if slot is not None else None

    def _pod_gone(self, key: str) -> None:
        self.queue.delete(key)
        self.assumed.drop(key)
        removed = self.table.remove_pod(key)
        if removed is not None:
            self._on_event(ClusterEvent(POD, ActionType.DELETE), removed, None)

    def replace_pods(self, items: list[JSON]) -> None:
        """After a (re)list: drop what is gone, keep assumed pods still in flight, add the rest."""
        listed = {object_key(item) for item in items}
        for _, slot in list(self.table.all_pods()):
            for key in list(self.table.pods[slot]):
                if key not in listed and not self.assumed.still_in_flight(key):
                    self._pod_gone(key)
        for key in self.queue.held():
            if key not in listed:
                self.queue.delete(key)
        for item in items:
            self.pod_event("ADDED", item)

    # -- nodes -----------------------------------------------------------------------------
    def node_event(self, kind: str, node: JSON) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        slot = self.table.slot_of(name)
        previous = self.table.objects[slot] if slot is not None else None
        if kind == "DELETED":
            self.table.remove_node(name)
            if previous is not None:
                self._on_event(ClusterEvent(NODE, ActionType.DELETE), previous, None)
            return
        self.table.add_node(node)
        if previous is None:
            self._on_event(ClusterEvent(NODE, ActionType.ADD), None, node)
            return
        actions = node_update_actions(previous, node)
        if actions:
            self._on_event(ClusterEvent(NODE, actions), previous, node)

    def replace_nodes(self, items: list[JSON]) -> None:
        listed = {(item.get("metadata") or {}).get("name") for item in items}
        for slot in self.table.active_slots().tolist():
            if self.table.names[slot] not in listed:
                self.table.remove_node(self.table.names[slot])
        for item in items:
            self.node_event("ADDED", item)
