"""The binding cycle keeps at most BIND_CONCURRENCY Bind calls in flight, however far the
scheduling cycle runs ahead: that bound is what a kill -9 under a backlog can leave bound with no
Scheduled Event (docs/reliability.md), so it is checked here, not left to a default."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from tests.unit.framework.kubeobjects import DEFAULT_PLUGINS, make_node, pod_info, table_of
from tests.unit.scheduler.test_schedule_one import Clock, Sinks

from secondary_scheduler.framework import CycleState, Framework, Handle, PodInfo, ProfileSpec, Status
from secondary_scheduler.framework.interface import BindPlugin
from secondary_scheduler.framework.status import SUCCESS
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.plugins.registry import in_tree_registry, merge
from secondary_scheduler.scheduler.assumed import AssumedPods
from secondary_scheduler.scheduler.metrics import SchedulerMetrics
from secondary_scheduler.scheduler.queue import SchedulingQueue
from secondary_scheduler.scheduler.schedule_one import BIND_CONCURRENCY, ScheduleOne


class GatedBinder(BindPlugin):
    """Holds every Bind call until ``gate`` opens, counting the calls in flight."""

    name: ClassVar[str] = "GatedBinder"
    gate: ClassVar[asyncio.Event]
    in_flight: ClassVar[int] = 0
    most: ClassVar[int] = 0

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        cls = type(self)
        cls.in_flight += 1
        cls.most = max(cls.most, cls.in_flight)
        await cls.gate.wait()
        cls.in_flight -= 1
        return SUCCESS


async def test_no_more_than_bind_concurrency_bind_calls_are_in_flight() -> None:
    GatedBinder.gate, GatedBinder.in_flight, GatedBinder.most = asyncio.Event(), 0, 0
    plugins = {**DEFAULT_PLUGINS, "bind": [("GatedBinder", 0)]}
    registry = merge(in_tree_registry(), (GatedBinder,), "test")
    framework = Framework(ProfileSpec("default-scheduler", plugins), registry, Handle())
    clock = Clock()
    table = table_of([make_node("n0"), make_node("n1")])
    queue: SchedulingQueue[PodInfo] = SchedulingQueue(framework.run_queue_sort_less, clock=clock)
    sinks = Sinks()
    cycle = ScheduleOne(
        {"default-scheduler": framework},
        table,
        AssumedPods(table, clock=clock),
        queue,
        events=sinks,
        pod_status=sinks,
        metrics=SchedulerMetrics(),
        on_cluster_event=sinks.cluster_event,
        clock=clock,
    )
    pods = BIND_CONCURRENCY + 10
    for index in range(pods):
        queue.add(pod_info(f"p{index}", requests={"cpu": "10m"}))
    bindings = []
    for _ in range(pods):  # the scheduling cycle runs ahead of every binding
        binding = cycle.scheduling_cycle(await queue.pop())
        assert binding is not None
        bindings.append(asyncio.create_task(cycle.binding_cycle(binding)))

    async def slots_taken() -> bool:
        return GatedBinder.in_flight >= BIND_CONCURRENCY

    await wait_for(slots_taken, f"{BIND_CONCURRENCY} Bind calls in flight", timeout=5, interval=0.01)
    # Every binding cycle has had its turns meanwhile: the others wait for a slot.
    assert GatedBinder.in_flight == BIND_CONCURRENCY
    GatedBinder.gate.set()
    await asyncio.gather(*bindings)
    assert GatedBinder.most == BIND_CONCURRENCY
    assert [event[0] for event in sinks.events] == ["Scheduled"] * pods
