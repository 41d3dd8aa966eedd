"""Pods the scheduler has placed but the watch has not yet shown bound (kube-scheduler's assumed pods).

A pod is counted on its node from the moment the scheduling cycle picks the node, so the
next cycles never give the same room away while the binding is in flight. The watch's
confirmation (the pod seen with ``spec.nodeName``) ends the assumption; a failed binding
forgets it and gives the room back. After a relist, a pod whose binding finished only
moments ago may be missing from the list (the list was older than the binding): it stays
counted for a grace period rather than being dropped and double-booked.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo

ASSUMED_GRACE_SECONDS = 30.0


class AssumedPods:
    def __init__(self, table: NodeTable, clock: Callable[[], float] = time.monotonic) -> None:
        self.table = table
        self._clock = clock
        self._pods: dict[str, tuple[str, float | None]] = {}
        """pod key -> (node, when its binding finished, or None while it is in flight)."""

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def assume(self, pod: PodInfo, node: str) -> None:
        """Count the pod on the node now, before it is bound."""
        self.table.add_pod(pod, node)
        self._pods[pod.key] = (node, None)

    def finish_binding(self, pod: PodInfo) -> None:
        """The API server accepted the binding: the grace period starts."""
        entry = self._pods.get(pod.key)
        if entry is not None:
            self._pods[pod.key] = (entry[0], self._clock())

    def forget(self, pod: PodInfo) -> None:
        """The binding failed (or Permit said no): give the node its room back."""
        if self._pods.pop(pod.key, None) is not None:
            self.table.remove_pod(pod.key)

    def confirm(self, key: str) -> bool:
        """The watch shows the pod bound: it is an ordinary pod from now on. Whether it was assumed."""
        return self._pods.pop(key, None) is not None

    def drop(self, key: str) -> None:
        """The pod is gone: stop tracking it (the caller removes it from the table)."""
        self._pods.pop(key, None)

    def still_in_flight(self, key: str) -> bool:
        """Whether a relist that misses the pod must keep it: binding in flight, or finished just now."""
        entry = self._pods.get(key)
        if entry is None:
            return False
        finished = entry[1]
        return finished is None or self._clock() - finished < ASSUMED_GRACE_SECONDS
