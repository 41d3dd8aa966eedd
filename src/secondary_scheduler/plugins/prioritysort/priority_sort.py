"""Higher priority first; among equals, the pod that entered the queue first."""

from __future__ import annotations

from typing import ClassVar

from secondary_scheduler.framework.interface import QueuedPodInfo, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    name: ClassVar[str] = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        first, second = a.pod.priority, b.pod.priority
        return first > second or (first == second and a.timestamp < b.timestamp)
