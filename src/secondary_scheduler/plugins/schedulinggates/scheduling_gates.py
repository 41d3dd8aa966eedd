"""A pod listing ``spec.schedulingGates`` is not scheduled until every gate is removed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import PreEnqueuePlugin
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SUCCESS, Status


class SchedulingGates(PreEnqueuePlugin):
    name: ClassVar[str] = "SchedulingGates"

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.scheduling_gates:
            return SUCCESS
        gates = " ".join(pod.scheduling_gates)
        return Status.unschedulable(f"waiting for scheduling gates: [{gates}]", unresolvable=True)
