"""``ScheduleOne`` over in-memory state: one pod's whole cycle with no API server, as a replay runs it.

The collaborators are the real ones that need no API server (NodeTable, AssumedPods,
SchedulingQueue, SchedulerMetrics) and recording sinks for Events and pod statuses; the
Binding is applied in memory by a bind plugin, on a clock the test moves.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tests.unit.framework.kubeobjects import DEFAULT_PLUGINS, make_node, pod_info, table_of

from secondary_scheduler.framework import CycleState, Framework, Handle, PodInfo, ProfileSpec, Status
from secondary_scheduler.framework.events import POD, ActionType, ClusterEvent
from secondary_scheduler.framework.interface import BindPlugin
from secondary_scheduler.framework.status import SUCCESS
from secondary_scheduler.plugins.registry import in_tree_registry, merge
from secondary_scheduler.scheduler.assumed import AssumedPods
from secondary_scheduler.scheduler.metrics import SchedulerMetrics
from secondary_scheduler.scheduler.queue import SchedulingQueue
from secondary_scheduler.scheduler.schedule_one import ScheduleOne


class InMemoryBinder(BindPlugin):
    """Applies the Binding to the test's state at once (``fail``: refuses it instead)."""

    name: ClassVar[str] = "InMemoryBinder"
    bound: ClassVar[list[tuple[str, str]]] = []
    fail: ClassVar[bool] = False

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if self.fail:
            return Status.error("the binding was refused")
        self.bound.append((pod.key, node_name))
        return SUCCESS


class Sinks:
    """Records what the cycle reports: Events, pod-status writes and cluster events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.statuses: list[tuple[str, str | None, str | None]] = []
        self.cluster_events: list[tuple[str, str, str]] = []

    def scheduled(self, pod: PodInfo, scheduler_name: str, node: str) -> None:
        self.events.append(("Scheduled", pod.key, node))

    def failed(self, pod: PodInfo, scheduler_name: str, message: str) -> None:
        self.events.append(("FailedScheduling", pod.key, message))

    def update(
        self, pod: PodInfo, *, reason: str | None = None, message: str = "", nominated: str | None = None
    ) -> None:
        self.statuses.append((pod.key, reason, nominated))

    def forget(self, uid: str) -> None:
        pass

    def cluster_event(self, event: ClusterEvent, old: Any, new: Any, skip: str) -> None:
        self.cluster_events.append((event.label, old.key, skip))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class World:
    """Two 4-cpu nodes, the default profile with the in-memory binder, and the cycle over them."""

    def __init__(self) -> None:
        InMemoryBinder.bound = []
        InMemoryBinder.fail = False
        plugins = {**DEFAULT_PLUGINS, "bind": [("InMemoryBinder", 0)]}
        registry = merge(in_tree_registry(), (InMemoryBinder,), "test")
        self.framework = Framework(ProfileSpec("default-scheduler", plugins), registry, Handle())
        self.clock = Clock()
        self.table = table_of([make_node("n0"), make_node("n1")])
        self.assumed = AssumedPods(self.table, clock=self.clock)
        self.queue: SchedulingQueue[PodInfo] = SchedulingQueue(
            self.framework.run_queue_sort_less, clock=self.clock
        )
        self.sinks = Sinks()
        self.metrics = SchedulerMetrics()
        self.cycle = ScheduleOne(
            {"default-scheduler": self.framework},
            self.table,
            self.assumed,
            self.queue,
            events=self.sinks,
            pod_status=self.sinks,
            metrics=self.metrics,
            on_cluster_event=self.sinks.cluster_event,
            clock=self.clock,
        )

    def attempts(self, result: str) -> float | None:
        labels = {"result": result, "profile": "default-scheduler"}
        return self.metrics.registry.get_sample_value("scheduler_schedule_attempts_total", labels)


async def test_a_pod_goes_from_the_queue_to_its_binding_in_memory() -> None:
    world = World()
    world.queue.add(pod_info("p", requests={"cpu": "3"}))
    item = await world.queue.pop()
    world.clock.now += 0.5
    binding = world.cycle.scheduling_cycle(item)
    assert binding is not None and binding.waiting is None
    assert "default/p" in world.assumed and "default/p" in world.table.pod_keys  # its room is kept
    await world.cycle.binding_cycle(binding)
    assert InMemoryBinder.bound == [("default/p", binding.node)]
    assert world.sinks.events == [("Scheduled", "default/p", binding.node)]
    assert world.sinks.statuses == [] and world.sinks.cluster_events == []
    assert world.attempts("scheduled") == 1.0 and world.queue.get("default/p") is None  # done with it
    sli = world.metrics.registry.get_sample_value(
        "scheduler_pod_scheduling_sli_duration_seconds_sum", {"attempts": "1"}
    )
    assert sli == 0.5  # on the cycle's clock, from the pod's entry into the queue


async def test_a_pod_that_fits_nowhere_is_requeued_and_reported() -> None:
    world = World()
    world.queue.add(pod_info("big", requests={"cpu": "5"}))
    assert world.cycle.scheduling_cycle(await world.queue.pop()) is None
    message = world.sinks.events[0][2]
    assert world.sinks.events == [("FailedScheduling", "default/big", message)]
    assert message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert world.sinks.statuses == [("default/big", "Unschedulable", None)]
    assert world.queue.counts()["unschedulable"] == 1 and world.attempts("unschedulable") == 1.0
    assert "default/big" not in world.table.pod_keys


async def test_a_refused_binding_gives_the_room_back_and_backs_off() -> None:
    world = World()
    InMemoryBinder.fail = True
    world.queue.add(pod_info("p", requests={"cpu": "3"}))
    binding = world.cycle.scheduling_cycle(await world.queue.pop())
    assert binding is not None
    await world.cycle.binding_cycle(binding)
    assert "default/p" not in world.assumed and "default/p" not in world.table.pod_keys
    message = 'running Bind plugin "InMemoryBinder": the binding was refused'
    assert world.sinks.events == [("FailedScheduling", "default/p", message)]
    assert world.sinks.statuses == [("default/p", "SchedulerError", None)]
    # An error frees the room before the requeue, and the pod itself may take it again.
    deleted = ClusterEvent(POD, ActionType.DELETE).label
    assert world.sinks.cluster_events == [(deleted, "default/p", "")]
    assert world.queue.counts()["backoff"] == 1 and world.attempts("error") == 1.0
