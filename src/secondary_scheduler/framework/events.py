"""Cluster events and queueing hints: which change may let an unschedulable pod fit now.

A pod that no node fits waits in the unschedulable pool. kube-scheduler does not retry
all of them on every change: each plugin registers the cluster events that can undo its
own rejections (``events_to_register``), optionally with a hint that looks at the pod and
the changed object and says whether this particular change can help. When an event
comes, a waiting pod moves back to the queue only if one of the plugins that rejected it
registered that event and its hint (if any) says yes. A plugin that registers nothing
(``events_to_register`` returns None) is interested in every event, as upstream treats
plugins without EnqueueExtensions; a pod whose rejection named no plugin moves on any event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntFlag
from typing import TYPE_CHECKING, Any

from secondary_scheduler.framework.aliases import KubeObject

if TYPE_CHECKING:
    from secondary_scheduler.framework.podinfo import PodInfo


POD = "Pod"
"""Assigned pods (bound, or assumed by this scheduler): what other pods' constraints see."""
NODE = "Node"


class ActionType(IntFlag):
    """What happened to the object, as kube-scheduler's fwk.ActionType (updates split by field)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    """Taints, or spec.unschedulable (upstream counts both as taint changes)."""
    UPDATE_NODE_ANNOTATION = 32
    UPDATE_POD_LABEL = 64
    UPDATE_POD_SCALE_DOWN = 128
    """An assigned pod's requests went down (in-place resize)."""
    UPDATE_OTHER = 256
    """Any other update (objects that are not nodes or pods are only ever this)."""
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True)
class ClusterEvent:
    resource: str
    """``POD``, ``NODE``, or the kind of an informer's resource (``PersistentVolumeClaim``)."""
    actions: ActionType

    def matches(self, happened: ClusterEvent) -> bool:
        """Whether this registration covers what ``happened``."""
        return self.resource == happened.resource and bool(self.actions & happened.actions)

    @property
    def label(self) -> str:
        """kube-scheduler's style of event label, e.g. ``NodeAdd``, ``AssignedPodDelete`` (for logs)."""
        if ActionType.ADD in self.actions:
            verb = "Add"
        elif ActionType.DELETE in self.actions:
            verb = "Delete"
        else:
            verb = "Update"
        return f"{'AssignedPod' if self.resource == POD else self.resource}{verb}"


QueueingHint = Callable[["PodInfo", Any, Any], bool]
"""(the waiting pod, the object before, after) -> whether the change may make the pod fit.

Before/after are PodInfo for ``POD`` events and the raw object otherwise; None for the
side that does not exist (before an Add, after a Delete)."""


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHint | None = None
    """None: every such event may help."""


def node_update_actions(old: KubeObject, new: KubeObject) -> ActionType:
    """Which scheduling-relevant parts of a Node changed (0 for heartbeats and status noise)."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    actions = ActionType(0)
    if (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable"):
        actions |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old_meta.get("labels") != new_meta.get("labels"):
        actions |= ActionType.UPDATE_NODE_LABEL
    if old_spec.get("taints") != new_spec.get("taints") or old_spec.get("unschedulable") != new_spec.get(
        "unschedulable"
    ):
        actions |= ActionType.UPDATE_NODE_TAINT
    return actions


def pod_update_actions(old: PodInfo, new: PodInfo) -> ActionType:
    """Which scheduling-relevant parts of an assigned pod changed."""
    actions = ActionType(0)
    if dict(old.labels) != dict(new.labels):
        actions |= ActionType.UPDATE_POD_LABEL
    if any(new.requests.get(name, 0) < value for name, value in old.requests.items()):
        actions |= ActionType.UPDATE_POD_SCALE_DOWN
    return actions
