"""Coscheduling's late Unreserve: a gang that cannot fit ends its rounds holding nothing.

The scheduler's queue runs ``handle.when_idle`` callbacks once it has no pod left to try;
here the test holds them and runs them where the queue would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.unit.framework.kubeobjects import make_node, table_of
from tests.unit.plugins.coscheduling.gang import member, podgroup

from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import Code
from secondary_scheduler.framework.waiting import WaitingPod
from secondary_scheduler.plugins.coscheduling.plugin import Coscheduling
from secondary_scheduler.plugins.coscheduling.podgroup import PODGROUPS

NODES = [make_node("n1", cpu="4", pods=10)]


class Loop:
    """What the plugin sees of the scheduler: activations and callbacks for when it is idle."""

    def __init__(self) -> None:
        self.activated: list[list[str]] = []
        self.idle: list[Callable[[], None]] = []
        self.handle = Handle(
            activator=lambda pods: self.activated.append([pod.name for pod in pods]),
            idle_notifier=self.idle.append,
        )

    def go_idle(self) -> int:
        callbacks = list(self.idle)
        self.idle.clear()
        for callback in callbacks:
            callback()
        return len(callbacks)


def setup(size: int, min_member: int) -> tuple[Coscheduling, Loop, list[PodInfo]]:
    loop = Loop()
    pods = [member(f"p-{index}", "g") for index in range(size)]
    loop.handle.informer(PODGROUPS).replace([podgroup("g", min_member)])
    plugin = Coscheduling.build({}, loop.handle)
    plugin.manager.replace(pods)
    return plugin, loop, [PodInfo.from_pod(pod) for pod in pods]


def place(plugin: Coscheduling, pod: PodInfo) -> WaitingPod:
    status, timeout = plugin.permit(CycleState(), pod, "n1")
    assert status.code == Code.WAIT
    return plugin.handle.waiting_pods.add(pod, "n1", {"Coscheduling": timeout})


async def fail_binding(plugin: Coscheduling, waiting: WaitingPod) -> str:
    """The rejected pod's binding cycle: the wait ends, the runtime unreserves it."""
    status = await asyncio.wait_for(waiting.wait(), 1)
    plugin.handle.waiting_pods.remove(waiting.pod.uid)
    plugin.unreserve(CycleState(), waiting.pod, "n1")
    return status.message


async def test_after_a_postfilter_rejection_the_next_round_is_rejected_late_and_activates_nobody() -> None:
    plugin, loop, pods = setup(6, min_member=5)
    first_round = [place(plugin, pod) for pod in pods[:3]]
    assert loop.activated == [["p-1", "p-2", "p-3", "p-4", "p-5"]]  # p-0 was the first assigned
    plugin.post_filter(CycleState(), pods[3], table_of(NODES), Diagnosis(1))  # p-3 fits nowhere
    for waiting in first_round:
        assert await fail_binding(plugin, waiting) == "optimistic rejection in PostFilter"
    # Their room is back and they left the assigned pods at once; the rest of Unreserve is late.
    assert plugin.manager.assigned_count("ns/g") == 0
    assert len(loop.idle) == 3

    # p-4 and p-5 were still to be tried: they fit and wait. p-4 is the first assigned, but
    # with late Unreserves pending (upstream: the late pods still count) it activates nobody.
    second_round = [place(plugin, pod) for pod in pods[4:]]
    assert loop.activated == [["p-1", "p-2", "p-3", "p-4", "p-5"]]
    assert plugin.manager.assigned_count("ns/g") == 2

    # The queue goes idle: the late Unreserves reject the new round, which gives its room back.
    assert loop.go_idle() == 3
    for waiting in second_round:
        assert await fail_binding(plugin, waiting) == "rejection in Unreserve"
    assert plugin.manager.assigned_count("ns/g") == 0
    assert loop.go_idle() == 2  # their own late Unreserves: nothing is left waiting
    assert len(plugin.handle.waiting_pods) == 0 and loop.idle == []

    # Nothing pending any more: the next round's first pod activates its siblings again.
    place(plugin, pods[0])
    assert loop.activated[-1] == ["p-1", "p-2", "p-3", "p-4", "p-5"]


async def test_a_pending_late_unreserve_never_lets_a_partial_gang_reach_min_member() -> None:
    plugin, _, pods = setup(5, min_member=3)
    first_round = [place(plugin, pod) for pod in pods[:2]]
    plugin.post_filter(CycleState(), pods[2], table_of(NODES), Diagnosis(1))
    for waiting in first_round:
        await fail_binding(plugin, waiting)
    # Upstream's late pods would still be counted (2 + 1 = minMember: the newcomer would be
    # allowed alone); here only the pods really placed count.
    status, _ = plugin.permit(CycleState(), pods[3], "n1")
    assert status.code == Code.WAIT
    assert plugin.manager.assigned_count("ns/g") == 1


async def test_a_timed_out_or_unbound_pod_rejects_its_waiting_siblings_at_once() -> None:
    plugin, loop, pods = setup(3, min_member=3)
    sibling = place(plugin, pods[0])
    place(plugin, pods[1])
    plugin.unreserve(CycleState(), pods[1], "n1")  # not rejected by the plugin: e.g. its Bind failed
    assert (await asyncio.wait_for(sibling.wait(), 1)).message == "rejection in Unreserve"
    assert loop.idle == []
