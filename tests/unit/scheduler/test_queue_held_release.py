"""Pods PreEnqueue keeps out on arrival come in on the events their gating plugin's hints accept
(upstream keeps gated pods among the unschedulable ones: a claim created after its pod lets the
pod in without an attempt), not only on their own updates."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.unit.scheduler.test_queue import Clock, FakePod, priority_less

from secondary_scheduler.scheduler.queue import QueuedPod, SchedulingQueue


def gated_queue(shut: set[str]) -> SchedulingQueue[FakePod]:
    return SchedulingQueue(
        priority_less, initial_backoff=1, max_backoff=10, clock=Clock(), gate=lambda pod: pod.key in shut
    )


def by_plugin(plugin: str) -> Callable[[QueuedPod[FakePod]], bool]:
    """An event only ``plugin``'s hints accept."""

    def worth(item: QueuedPod[FakePod]) -> bool:
        return plugin in item.rejectors

    return worth


async def test_an_event_of_the_gating_plugin_lets_the_pod_in_once_its_gate_opens() -> None:
    shut = {"p"}
    queue = gated_queue(shut)
    queue.hold(FakePod("p"), "DynamicResources")
    assert queue.counts()["gated"] == 1 and "p" not in queue
    assert queue.move_all_to_active_or_backoff("ResourceClaimAdd", by_plugin("DynamicResources")) == 0
    shut.clear()  # the claim is in the informer now
    assert queue.move_all_to_active_or_backoff("NodeAdd", by_plugin("NodeResourcesFit")) == 0
    assert queue.held() == ["p"]
    assert queue.move_all_to_active_or_backoff("ResourceClaimAdd", by_plugin("DynamicResources")) == 1
    assert queue.held() == []
    assert queue.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    item = await asyncio.wait_for(queue.pop(), 1)
    assert (item.pod.key, item.attempts, item.unschedulable_count) == ("p", 1, 0)  # never tried before


async def test_a_pod_held_without_a_plugins_events_waits_for_its_own_update() -> None:
    queue = gated_queue(set())
    queue.hold(FakePod("g"), "SchedulingGates")  # registers no event: only its own update ungates it
    assert queue.move_all_to_active_or_backoff("NodeAdd", by_plugin("NodeResourcesFit")) == 0
    queue.add(FakePod("g"))
    assert queue.held() == [] and "g" in queue
