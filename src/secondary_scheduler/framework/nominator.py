"""``Nominator``: which pending pods are nominated to which node, as kube-scheduler's PodNominator.

A pod that preempted others waits for its victims to go; meanwhile the room they leave
must not be taken by a pod of lower (or equal) importance, so the filters count the
nominated pods of equal or higher priority on their node (``framework.nominated_filter``).

The nominator learns nominations from two places, as upstream's does:

- the framework, the moment a PostFilter plugin (preemption) nominates (before the status
  patch reaches the API server, so the next cycle already respects it);
- the scheduler's pod watch: ``status.nominatedNodeName`` of the unassigned pods of our
  profiles (set by this process earlier, or by another instance before a restart). An
  update that shows no nomination on either side keeps the one set in memory (the watch
  may lag behind the plugin); one that clears it, a binding or a deletion drops it.

One Nominator serves every profile (``handle.nominator``); it is fed only for profiles with
PostFilter plugins (``watch``), so a scheduler without preemption pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.podphase import TERMINAL_PHASES

if TYPE_CHECKING:
    from secondary_scheduler.framework.handle import Handle


class Nominator:
    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}
        """Pod UID -> the node it is nominated to."""
        self._pods: dict[str, dict[str, PodInfo]] = {}
        """Node -> pod UID -> the nominated pod, in nomination order."""
        self._seen: dict[str, str] = {}
        """Pod UID -> ``status.nominatedNodeName`` as the watch last showed it ("" for none)."""
        self._schedulers: set[str] = set()
        """The profiles whose pods the watch is followed for (kube-scheduler's responsibleForPod)."""
        self._watching = False

    # -- what plugins and the framework read ----------------------------------------------
    def __len__(self) -> int:
        return len(self._node_of)

    def node_of(self, uid: str) -> str | None:
        """The node the pod with this UID is nominated to, if any."""
        return self._node_of.get(uid)

    def pods_on(self, node: str) -> list[PodInfo]:
        """The pods nominated to ``node``, in the order they were nominated."""
        return list(self._pods.get(node, {}).values())

    def by_node(self) -> Mapping[str, Mapping[str, PodInfo]]:
        """Node -> pod UID -> nominated pod (a read-only view; do not keep it across cycles)."""
        return self._pods

    def __iter__(self) -> Iterator[tuple[PodInfo, str]]:
        """(pod, node) of every nomination."""
        for node, pods in list(self._pods.items()):
            for pod in list(pods.values()):
                yield pod, node

    # -- nominating ---------------------------------------------------------------------------
    def add(self, pod: PodInfo, node: str) -> None:
        """Nominate ``pod`` to ``node`` (replacing an earlier nomination of it); "" removes it."""
        self.remove(pod.uid)
        if not node:
            return
        self._node_of[pod.uid] = node
        self._pods.setdefault(node, {})[pod.uid] = pod

    def remove(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._pods[node]
        pods.pop(uid, None)
        if not pods:
            del self._pods[node]

    # -- the pod watch (kube.reflector.WatchHandler) ------------------------------------------
    def watch(self, handle: Handle, scheduler_name: str) -> None:
        """Follow the nominations of ``scheduler_name``'s pods through the scheduler's pod watch."""
        self._schedulers.add(scheduler_name)
        if not self._watching:
            self._watching = True
            handle.watch_pods(self)
            handle.on_pod_bound(lambda pod, _node: self.remove(pod.uid))

    def replace(self, items: list[dict[str, Any]]) -> None:
        listed: set[str] = set()
        for item in items:
            listed.add(_uid(item))
            self.event("ADDED", item)
        for uid in [uid for uid in self._node_of if uid not in listed]:
            self.remove(uid)
        for uid in [uid for uid in self._seen if uid not in listed]:
            del self._seen[uid]

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        uid = _uid(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        gone = (
            kind == "DELETED"
            or spec.get("nodeName")
            or status.get("phase") in TERMINAL_PHASES
            or (obj.get("metadata") or {}).get("deletionTimestamp")
            or (spec.get("schedulerName") or "default-scheduler") not in self._schedulers
        )
        if gone:
            self._seen.pop(uid, None)
            self.remove(uid)
            return
        old = self._seen.get(uid, "")
        new = str(status.get("nominatedNodeName") or "")
        self._seen[uid] = new
        if not old and not new:
            # An update that says nothing of a nomination: keep the one made in memory (the
            # plugin's status patch may not have come back through the watch yet).
            node = self._node_of.get(uid)
            if node is not None:
                self.add(PodInfo.from_pod(obj), node)
            return
        if new:
            self.add(PodInfo.from_pod(obj), new)
        else:
            self.remove(uid)


def _uid(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))
