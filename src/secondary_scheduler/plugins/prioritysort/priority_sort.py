"""Higher priority first; among equals, the pod that entered the queue first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import QueuedPodInfo, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    name: ClassVar[str] = "PrioritySort"

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        first, second = a.pod.priority, b.pod.priority
        return first > second or (first == second and a.timestamp < b.timestamp)
