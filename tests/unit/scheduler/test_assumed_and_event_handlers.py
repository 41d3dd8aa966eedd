"""Assumed pods keep their room until the watch confirms them; watch events reach table and queue."""

from __future__ import annotations

from typing import Any

from tests.unit.framework.kubeobjects import default_framework, make_node, make_pod, pod_info

from secondary_scheduler.framework import NodeTable, PodInfo
from secondary_scheduler.framework.resources import CPU_COLUMN
from secondary_scheduler.scheduler.assumed import ASSUMED_GRACE_SECONDS, AssumedPods
from secondary_scheduler.scheduler.eventhandlers import EventHandlers
from secondary_scheduler.scheduler.queue import SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def setup(
    clock: Clock | None = None,
) -> tuple[NodeTable, SchedulingQueue[PodInfo], AssumedPods, EventHandlers]:
    table = NodeTable()
    framework = default_framework()
    queue: SchedulingQueue[PodInfo] = SchedulingQueue(framework.run_queue_sort_less)
    assumed = AssumedPods(table, clock or Clock())
    handlers = EventHandlers(table, queue, {"default-scheduler": framework}, assumed)
    handlers.replace_nodes([make_node("n1", cpu="2")])
    return table, queue, assumed, handlers


def cpu_requested(table: NodeTable, node: str) -> int:
    slot = table.slot_of(node)
    assert slot is not None
    return int(table.requested[slot, CPU_COLUMN])


def test_an_assumed_pod_holds_its_room_until_forgotten() -> None:
    table, _, assumed, _ = setup()
    pod = pod_info("p", requests={"cpu": "1"})
    assumed.assume(pod, "n1")
    assert "default/p" in assumed
    assert cpu_requested(table, "n1") == 1000
    assumed.forget(pod)
    assert cpu_requested(table, "n1") == 0
    assert "default/p" not in assumed


def test_the_watch_confirms_an_assumed_pod_once() -> None:
    table, _, assumed, handlers = setup()
    pod = make_pod("p", requests={"cpu": "1"})
    assumed.assume(PodInfo.from_pod(pod), "n1")
    handlers.pod_event("MODIFIED", {**pod, "spec": {**pod["spec"], "nodeName": "n1"}})
    assert "default/p" not in assumed
    assert cpu_requested(table, "n1") == 1000  # counted once, not twice


def test_a_relist_keeps_a_pod_whose_binding_just_finished_then_lets_it_go() -> None:
    clock = Clock()
    table, _, assumed, handlers = setup(clock)
    pod = pod_info("p", requests={"cpu": "1"})
    assumed.assume(pod, "n1")
    assumed.finish_binding(pod)
    handlers.replace_pods([])  # a list older than the binding
    assert cpu_requested(table, "n1") == 1000
    clock.now += ASSUMED_GRACE_SECONDS + 1
    handlers.replace_pods([])
    assert cpu_requested(table, "n1") == 0


def test_our_pending_pods_are_queued_others_are_not() -> None:
    _, queue, _, handlers = setup()
    handlers.pod_event("ADDED", make_pod("ours"))
    handlers.pod_event("ADDED", make_pod("theirs", schedulerName="someone-else"))
    assert "default/ours" in queue
    assert "default/theirs" not in queue


def test_gated_pods_wait_outside_the_queue_until_their_gates_are_gone() -> None:
    _, queue, _, handlers = setup()
    gated = make_pod("g", schedulingGates=[{"name": "wait"}])
    handlers.pod_event("ADDED", gated)
    assert queue.held() == ["default/g"] and "default/g" not in queue
    assert queue.counts()["gated"] == 1
    ungated: dict[str, Any] = {
        **gated,
        "spec": {k: v for k, v in gated["spec"].items() if k != "schedulingGates"},
    }
    handlers.pod_event("MODIFIED", ungated)
    assert queue.held() == [] and "default/g" in queue
    assert queue.counts()["gated"] == 0


def test_a_deleted_assigned_pod_frees_its_room() -> None:
    table, _, _, handlers = setup()
    bound = make_pod("b", requests={"cpu": "1"}, node_name="n1")
    handlers.pod_event("ADDED", bound)
    assert cpu_requested(table, "n1") == 1000
    handlers.pod_event("DELETED", bound)
    assert cpu_requested(table, "n1") == 0


async def test_heartbeats_do_not_requeue_but_a_label_change_does() -> None:
    _, queue, _, handlers = setup()
    handlers.pod_event("ADDED", make_pod("p"))
    item = await queue.pop()  # in flight: events now are remembered with it
    node = make_node("n1", cpu="2")
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    handlers.node_event("MODIFIED", node)
    assert item.events_in_flight == []
    handlers.node_event("MODIFIED", make_node("n1", cpu="2", labels={"zone": "a"}))
    assert len(item.events_in_flight) == 1


def test_a_pod_resized_in_place_holds_the_larger_size_until_the_resize_is_done() -> None:
    table, _, _, handlers = setup()
    pod = make_pod("r", requests={"cpu": "500m"}, node_name="n1")
    handlers.pod_event("ADDED", pod)
    assert cpu_requested(table, "n1") == 500
    resized = {
        **pod,
        "spec": {**pod["spec"], "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
    }
    resized["status"] = {"containerStatuses": [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}]}
    handlers.pod_event("MODIFIED", resized)
    assert cpu_requested(table, "n1") == 1000  # max(spec, running)
    shrunk = {
        **resized,
        "spec": {**pod["spec"], "containers": [{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]},
    }
    shrunk["status"] = {"containerStatuses": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}
    handlers.pod_event("MODIFIED", shrunk)
    assert cpu_requested(table, "n1") == 1000  # still running with 1 core
    done = {
        **shrunk,
        "status": {"containerStatuses": [{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]},
    }
    handlers.pod_event("MODIFIED", done)
    assert cpu_requested(table, "n1") == 200


def test_the_kubelets_status_updates_do_not_parse_a_bound_pod_again() -> None:
    table, _, _, handlers = setup()
    pod = make_pod("k", requests={"cpu": "1"}, node_name="n1")
    handlers.pod_event("MODIFIED", pod)
    slot = table.slot_of("n1")
    assert slot is not None
    counted = table.pods[slot]["default/k"]
    running = {
        **pod,
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": True, "state": {"running": {}}}],
        },
    }
    handlers.pod_event("MODIFIED", running)
    assert table.pods[slot]["default/k"] is counted
    assert cpu_requested(table, "n1") == 1000


def test_a_terminating_pod_is_re_read() -> None:
    table, _, _, handlers = setup()
    pod = make_pod("t", node_name="n1")
    handlers.pod_event("ADDED", pod)
    handlers.pod_event(
        "MODIFIED", {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    )
    slot = table.slot_of("n1")
    assert slot is not None and table.pods[slot]["default/t"].terminating


def test_a_relist_without_a_gated_pod_stops_holding_it() -> None:
    """The queue is the one owner of gated pods: a relist that no longer shows one drops it there."""
    _, queue, _, handlers = setup()
    handlers.pod_event("ADDED", make_pod("g", schedulingGates=[{"name": "wait"}]))
    handlers.replace_pods([make_pod("other")])
    assert queue.held() == [] and queue.counts()["gated"] == 0 and "default/other" in queue
