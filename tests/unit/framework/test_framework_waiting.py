"""Pods a Permit plugin holds (kube-scheduler's waitingPodsMap): allowed by all, rejected, timed out."""

from __future__ import annotations

import asyncio

import pytest

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import Code
from secondary_scheduler.framework.waiting import WaitingPod, WaitingPods


def pod(name: str) -> PodInfo:
    return PodInfo.from_pod({"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": {}})


async def settled(waiting: WaitingPod) -> bool:
    """Whether ``wait()`` has an answer now (without waiting for one)."""
    task = asyncio.ensure_future(waiting.wait())
    await asyncio.sleep(0)
    done = task.done()
    task.cancel()
    return done


async def test_the_pod_goes_on_once_every_waiting_plugin_allowed_it() -> None:
    waiting = WaitingPod(pod("a"), "node-1", {"Gang": 30, "Quota": 30})
    assert sorted(waiting.pending_plugins) == ["Gang", "Quota"]
    waiting.allow("Gang")
    assert waiting.pending_plugins == ["Quota"]
    assert not await settled(waiting)  # one plugin still holds it
    waiting.allow("Quota")
    status = await asyncio.wait_for(waiting.wait(), 1)
    assert status.is_success
    assert waiting.pending_plugins == []


async def test_allowing_for_a_plugin_that_does_not_hold_the_pod_changes_nothing() -> None:
    waiting = WaitingPod(pod("a"), "node-1", {"Gang": 30})
    waiting.allow("Other")
    assert waiting.pending_plugins == ["Gang"]
    assert not await settled(waiting)


async def test_one_rejection_ends_the_wait_as_unschedulable_by_that_plugin() -> None:
    waiting = WaitingPod(pod("a"), "node-1", {"Gang": 30, "Quota": 30})
    waiting.allow("Gang")
    waiting.reject("Quota", "quota of team-a is used up")
    status = await asyncio.wait_for(waiting.wait(), 1)
    assert (status.code, status.message, status.plugin) == (
        Code.UNSCHEDULABLE,
        "quota of team-a is used up",
        "Quota",
    )
    assert status.is_rejected
    assert waiting.pending_plugins == []  # and its timers are cancelled
    waiting.allow("Quota")  # too late: the answer stands
    assert (await waiting.wait()).plugin == "Quota"


async def test_a_timeout_rejects_with_kube_schedulers_wording() -> None:
    waiting = WaitingPod(pod("a"), "node-1", {"Gang": 0.05, "Quota": 30})
    status = await asyncio.wait_for(waiting.wait(), 2)
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "Gang")
    assert status.message == "rejected due to timeout after waiting 50ms at plugin Gang"
    assert waiting.pending_plugins == []


async def test_an_allowed_plugins_timer_no_longer_fires() -> None:
    waiting = WaitingPod(pod("a"), "node-1", {"Gang": 0.05, "Quota": 30})
    waiting.allow("Gang")
    await asyncio.sleep(0.1)
    assert waiting.pending_plugins == ["Quota"]
    assert not await settled(waiting)
    waiting.allow("Quota")
    assert (await asyncio.wait_for(waiting.wait(), 1)).is_success


async def test_cancelling_a_waiter_leaves_the_answer_for_the_next() -> None:
    """The binding cycle may be cancelled (shutdown) while a plugin later allows the pod."""
    waiting = WaitingPod(pod("a"), "node-1", {"Gang": 30})
    waiter = asyncio.ensure_future(waiting.wait())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    waiting.allow("Gang")
    assert (await asyncio.wait_for(waiting.wait(), 1)).is_success


async def test_waiting_pods_are_found_by_uid_and_iterated() -> None:
    pods = WaitingPods()
    first = pods.add(pod("a"), "node-1", {"Gang": 30})
    second = pods.add(pod("b"), "node-2", {"Gang": 30})
    assert pods.get("uid-a") is first and pods.get("uid-b") is second and pods.get("uid-c") is None
    assert len(pods) == 2
    # What a gang plugin does: allow every member; removing while iterating is safe.
    for member in pods:
        member.allow("Gang")
        pods.remove(member.pod.uid)
    assert len(pods) == 0 and list(pods) == []
    pods.remove("uid-a")  # removing twice is harmless
    assert (await first.wait()).is_success and (await second.wait()).is_success
    assert (first.node_name, second.node_name) == ("node-1", "node-2")


async def test_a_pod_waiting_again_replaces_its_old_entry() -> None:
    pods = WaitingPods()
    old = pods.add(pod("a"), "node-1", {"Gang": 30})
    old.reject("Gang", "group incomplete")
    new = pods.add(pod("a"), "node-2", {"Gang": 30})
    assert pods.get("uid-a") is new and len(pods) == 1
