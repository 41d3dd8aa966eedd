"""The scheduling queue orders, backs off and requeues as kube-scheduler's does."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from secondary_scheduler.scheduler.queue import QueuedPod, SchedulingQueue

FIT = frozenset({"NodeResourcesFit"})


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
    queue.requeue_failed(item, unschedulable=True, rejectors=FIT)
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}
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
    queue.requeue_failed(item, unschedulable=True, rejectors=FIT)
    assert queue.counts() == {"active": 0, "backoff": 1, "unschedulable": 0, "gated": 0}
    assert (await asyncio.wait_for(queue.pop(), 1)).pod.key == "p"  # nothing active: popped at once


async def test_a_gated_pod_waits_until_its_gate_opens_and_an_event_comes() -> None:
    """PreEnqueue asked on the way back in (a preemptor whose victims are being evicted)."""
    clock = Clock()
    gated = {"p"}
    queue: SchedulingQueue[FakePod] = SchedulingQueue(
        priority_less, initial_backoff=1, max_backoff=10, clock=clock, gate=lambda pod: pod.key in gated
    )
    queue.add(FakePod("p"))
    item = await queue.pop()
    queue.move_all_to_active_or_backoff("AssignedPodDelete")  # while in flight
    queue.requeue_failed(item, unschedulable=True, rejectors=FIT)
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    for _ in range(2):  # neither events nor activation let it in while the gate is shut
        queue.move_all_to_active_or_backoff("AssignedPodDelete")
        assert queue.activate(["p"]) == 0
        clock.now += 301
        queue.flush()
        assert queue.counts()["gated"] == 1
    gated.clear()
    assert queue.counts()["gated"] == 1  # still waiting for something to ask again
    assert queue.activate(["p"]) == 1
    assert (await asyncio.wait_for(queue.pop(), 1)).pod.key == "p"


async def test_unschedulable_pods_are_flushed_after_the_timeout() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("p"))
    queue.requeue_failed(await queue.pop(), unschedulable=True, rejectors=FIT)
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
    queue.requeue_failed(await queue.pop(), unschedulable=True, rejectors=FIT)
    clock.now += 2
    queue.update(FakePod("p", priority=5))
    assert queue.counts()["active"] == 1
    assert (await queue.pop()).pod.priority == 5


# -- kube-scheduler 1.34's backoff rules (backoff_queue.go) and SchedulerPopFromBackoffQ --------


async def fail(queue: SchedulingQueue[FakePod], key: str, *, error: bool = False) -> QueuedPod[FakePod]:
    """Add the pod if new, pop it and fail it (rejected by NodeResourcesFit, or an error)."""
    if key not in queue:
        queue.add(FakePod(key))
    item = await asyncio.wait_for(queue.pop(), 1)
    assert item.pod.key == key
    queue.move_all_to_active_or_backoff("NodeAdd")  # an event in flight: backoff, not unschedulable
    queue.requeue_failed(item, unschedulable=not error, rejectors=frozenset() if error else FIT)
    return item


async def test_an_idle_queue_pops_a_rejected_pod_from_backoff_at_once_but_not_an_errored_one() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("rejected"))
    queue.add(FakePod("errored"))
    rejected, errored = await queue.pop(), await queue.pop()
    queue.move_all_to_active_or_backoff("NodeAdd")  # both were in flight: both go to backoff
    queue.requeue_failed(rejected, unschedulable=True, rejectors=FIT)
    queue.requeue_failed(errored, unschedulable=False)
    assert queue.counts() == {"active": 0, "backoff": 2, "unschedulable": 0, "gated": 0}
    assert (await asyncio.wait_for(queue.pop(), 1)).pod.key == "rejected"  # no backoff wait
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.pop(), 0.2)  # the errored pod waits out its backoff


async def test_active_pods_go_before_backing_off_ones() -> None:
    clock = Clock()
    queue = make_queue(clock)
    await fail(queue, "b")
    queue.add(FakePod("a"))
    assert [(await queue.pop()).pod.key for _ in range(2)] == ["a", "b"]


async def test_backoff_pops_by_expiry_window_then_as_the_active_queue() -> None:
    clock = Clock()
    queue = make_queue(clock)
    late = await fail(queue, "late")
    await fail(queue, "late")  # twice: 2 s
    clock.now += 0.5
    await fail(queue, "low")  # 1 s from 1000.5: the window of 1001
    clock.now += 0.2
    queue.add(FakePod("high", priority=10))
    await fail(queue, "high")  # 1 s from 1000.7: the same window, but higher priority
    assert late.backoff_until == 1002.0
    assert [(await queue.pop()).pod.key for _ in range(3)] == ["high", "low", "late"]


async def test_backoff_counts_unschedulable_failures_and_errors_apart() -> None:
    clock = Clock()
    queue = make_queue(clock)
    item = await fail(queue, "p")
    assert (item.unschedulable_count, item.consecutive_errors, item.backoff_until) == (1, 0, 1001.0)
    for _ in range(3):
        await fail(queue, "p", error=True)
        clock.now = item.backoff_until + 1  # an errored pod waits its backoff out
    # Errors in a row set the backoff while they last: 3 -> 4 s from the last failure.
    assert (item.unschedulable_count, item.consecutive_errors) == (1, 3)
    assert item.backoff_until == item.timestamp + 4
    # A rejection again: the error streak ends and the rejections count (2 -> 2 s).
    await fail(queue, "p")
    assert (item.unschedulable_count, item.consecutive_errors) == (2, 0)
    assert item.backoff_until == item.timestamp + 2
    # Moved back without failing (activated) and popped: the backoff does not grow.
    assert queue.activate(["p"]) == 1
    assert (await queue.pop()).unschedulable_count == 2


async def test_a_backoff_ends_at_the_start_of_the_window_after_its_truncated_expiry() -> None:
    clock = Clock()
    queue = make_queue(clock)
    clock.now = 1000.4
    item = await fail(queue, "p", error=True)  # 1 s: 1001.4, truncated to the window of 1001
    assert item.backoff_until == 1001.0
    for now, backing_off in ((1000.9, True), (1001.5, True), (1001.99, True), (1002.0, False)):
        clock.now = now
        assert queue.backing_off(item) is backing_off, now


async def test_no_backoff_when_the_maximum_is_zero() -> None:
    clock = Clock()
    queue: SchedulingQueue[FakePod] = SchedulingQueue(
        priority_less, initial_backoff=1, max_backoff=0, clock=clock
    )
    queue.add(FakePod("p"))
    queue.requeue_failed(await queue.pop(), unschedulable=False)
    assert queue.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


async def test_idle_callbacks_run_once_nothing_is_left_to_pop() -> None:
    clock = Clock()
    queue = make_queue(clock)
    ran: list[int] = []
    await fail(queue, "b")
    queue.add(FakePod("a"))
    queue.call_when_idle(lambda: ran.append(len(ran)))
    assert (await queue.pop()).pod.key == "a"
    assert (await queue.pop()).pod.key == "b"  # from backoff: still not idle
    assert ran == []

    def requeue() -> None:
        ran.append(len(ran))
        queue.add(FakePod("c"))

    queue.call_when_idle(requeue)
    assert (await asyncio.wait_for(queue.pop(), 1)).pod.key == "c"  # the callbacks ran, then "c"
    assert ran == [0, 1]


async def test_a_pod_rejected_at_permit_ignores_the_events_of_its_wait_but_not_an_activation() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("waited"))
    queue.add(FakePod("activated"))
    waited, activated = await queue.pop(), await queue.pop()
    queue.move_all_to_active_or_backoff("AssignedPodDelete")  # while both wait at Permit
    assert queue.activate(["activated"]) == 0  # in flight: remembered, not moved
    for item in (waited, activated):
        queue.drop_events_in_flight(item.pod.key)  # rejected at Permit: it had room
        queue.requeue_failed(item, unschedulable=True, rejectors=frozenset({"GroupPermit"}))
    assert queue.counts() == {"active": 0, "backoff": 1, "unschedulable": 1, "gated": 0}
    assert (await queue.pop()).pod.key == "activated"
