"""The scheduler's two Events say what kube-scheduler's say (schedule_one.go), through any recorder."""

from __future__ import annotations

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.events.objects import MAX_NOTE, PodReference
from secondary_scheduler.scheduler.events import SchedulerEvents, truncate_note


class Recorded:
    """A recorder that keeps what it is given."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str, str]] = []

    def record(
        self, regarding: PodReference, reporter: str, event_type: str, reason: str, action: str, note: str
    ) -> None:
        self.events.append((regarding.name, reporter, event_type, reason, action, note))


def pod() -> PodInfo:
    return PodInfo.from_pod({"metadata": {"name": "web-0", "namespace": "ns", "uid": "u"}, "spec": {}})


def test_scheduled_and_failed_scheduling_events() -> None:
    recorded = Recorded()
    events = SchedulerEvents(recorded)
    events.scheduled(pod(), "secondary-scheduler", "node-a")
    events.failed(pod(), "secondary-scheduler", "0/3 nodes are available")
    assert recorded.events == [
        (
            "web-0",
            "secondary-scheduler",
            "Normal",
            "Scheduled",
            "Binding",
            "Successfully assigned ns/web-0 to node-a",
        ),
        (
            "web-0",
            "secondary-scheduler",
            "Warning",
            "FailedScheduling",
            "Scheduling",
            "0/3 nodes are available",
        ),
    ]


def test_failed_scheduling_note_is_truncated_like_kube_scheduler() -> None:
    assert truncate_note("short") == "short"
    exact = "x" * MAX_NOTE
    assert truncate_note(exact) == exact
    long = truncate_note("y" * 5000)
    assert len(long.encode()) == MAX_NOTE and long.endswith("y ...")
    recorded = Recorded()
    SchedulerEvents(recorded).failed(pod(), "s", "z" * 5000)
    assert recorded.events[0][-1] == truncate_note("z" * 5000)
