"""The scheduling queue orders, backs off and requeues as kube-scheduler's does."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from secondary_scheduler.scheduler.queue import QueuedPod, SchedulingQueue


@dataclass
class FakePod:
    key: str
    priority: int = 0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def priority_less(a: QueuedPod[FakePod], b: QueuedPod[FakePod]) -> bool:
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


def make_queue(clock: Clock) -> SchedulingQueue[FakePod]:
    return SchedulingQueue(
        priority_less, initial_backoff=1, max_backoff=10, unschedulable_timeout=300, clock=clock
    )


async def test_pops_by_priority_then_arrival() -> None:
    clock = Clock()
    queue = make_queue(clock)
    for key, priority in (("a", 0), ("b", 10), ("c", 0), ("d", 10)):
        queue.add(FakePod(key, priority))
        clock.now += 1
    order = [(await queue.pop()).pod.key for _ in range(4)]
    assert order == ["b", "d", "a", "c"]


async def test_backoff_doubles_and_caps() -> None:
    queue = make_queue(Clock())
    assert [queue.backoff_duration(n) for n in (1, 2, 3, 4, 5, 6)] == [1, 2, 4, 8, 10, 10]


async def test_unschedulable_pod_waits_for_an_event() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("p"))
    item = await queue.pop()
    queue.requeue_failed(item, unschedulable=True)
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 1}
    clock.now += 60  # backoff over, but nothing changed in the cluster: still waits
    queue.flush()
    assert queue.counts()["unschedulable"] == 1
    queue.move_all_to_active_or_backoff("NodeAdd")
    assert queue.counts()["active"] == 1
    assert (await queue.pop()).attempts == 2


async def test_event_during_the_attempt_sends_the_pod_to_backoff() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("p"))
    item = await queue.pop()
    queue.move_all_to_active_or_backoff("NodeAdd")  # arrives while "p" is in flight
    queue.requeue_failed(item, unschedulable=True)
    assert queue.counts() == {"active": 0, "backoff": 1, "unschedulable": 0}
    clock.now += 1.01
    assert (await asyncio.wait_for(queue.pop(), 1)).pod.key == "p"


async def test_unschedulable_pods_are_flushed_after_the_timeout() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("p"))
    queue.requeue_failed(await queue.pop(), unschedulable=True)
    clock.now += 301
    queue.flush()
    assert queue.counts()["active"] == 1


async def test_deleted_pods_are_never_popped() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("gone"))
    queue.add(FakePod("kept"))
    queue.delete("gone")
    assert (await queue.pop()).pod.key == "kept"
    item = await queue.pop() if queue.counts()["active"] else None
    assert item is None


async def test_update_of_an_unschedulable_pod_gives_it_another_try() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("p"))
    queue.requeue_failed(await queue.pop(), unschedulable=True)
    clock.now += 2
    queue.update(FakePod("p", priority=5))
    assert queue.counts()["active"] == 1
    assert (await queue.pop()).pod.priority == 5
