"""What kube-scheduler's Events say: Scheduled once a pod is bound, FailedScheduling when it is not.

The words are the scheduler's (``schedule_one.go``: reasons, actions, the "Successfully
assigned" note, the truncated failure message); how an Event reaches the API server
(queue, senders, series) is ``kube.events.recorder``'s.
"""

from __future__ import annotations

from typing import Protocol

from secondary_scheduler.kube.events.objects import MAX_NOTE, PodReference

SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"
BINDING = "Binding"
"""The action of a Scheduled Event."""
SCHEDULING = "Scheduling"
"""The action of a FailedScheduling Event."""


class Recorder(Protocol):
    """Where Events are queued (``kube.events.recorder.EventRecorder``)."""

    def record(
        self, regarding: PodReference, reporter: str, event_type: str, reason: str, action: str, note: str
    ) -> None: ...


def truncate_note(note: str) -> str:
    """kube-scheduler's truncateMessage: at most MAX_NOTE bytes, ending in " ..." when cut."""
    raw = note.encode()
    if len(raw) <= MAX_NOTE:
        return note
    suffix = " ..."
    return raw[: MAX_NOTE - len(suffix)].decode(errors="replace") + suffix


class SchedulerEvents:
    """The scheduling cycle's two Events, written through a recorder."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def scheduled(self, pod: PodReference, scheduler_name: str, node: str) -> None:
        """kube-scheduler's Normal/Scheduled event, once a pod is bound."""
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self.recorder.record(pod, scheduler_name, "Normal", SCHEDULED, BINDING, note)

    def failed(self, pod: PodReference, scheduler_name: str, message: str) -> None:
        """kube-scheduler's Warning/FailedScheduling event, when a pod fits nowhere (or errors)."""
        self.recorder.record(
            pod, scheduler_name, "Warning", FAILED_SCHEDULING, SCHEDULING, truncate_note(message)
        )
