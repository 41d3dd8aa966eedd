"""The PodGroup status controller's steps (as scheduler-plugins'), and the merge patch it writes."""

from __future__ import annotations

from typing import Any

from tests.unit.plugins.coscheduling.gang import member, podgroup

from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.plugins.coscheduling.podgroup import PODGROUPS
from secondary_scheduler.plugins.coscheduling.status import (
    PodGroupStatusController,
    next_status,
    occupied_by,
    status_patch,
)


def pod(name: str, phase: str = "Pending", owner: str | None = None) -> dict[str, Any]:
    obj = member(name, "g")
    obj["status"] = {"phase": phase}
    if owner:
        obj["metadata"]["ownerReferences"] = [{"name": owner, "kind": "Job", "uid": "u"}]
    return obj


def settle(group: dict[str, Any], pods: list[dict[str, Any]]) -> list[str]:
    """Reconcile until nothing changes (each write brings the PodGroup back); the phases passed through."""
    phases: list[str] = []
    for _ in range(10):
        new = next_status(group, pods)
        if new is None or not status_patch(group.get("status") or {}, new):
            return phases
        group = {**group, "status": new}
        phases.append(new["phase"])
    raise AssertionError("no fixed point")


def test_a_new_group_is_pending_then_scheduling_once_it_has_min_member_pods() -> None:
    pods = [pod(f"p-{index}", owner="job") for index in range(2)]
    assert settle(podgroup("g", 3), pods) == ["Pending"]
    pods.append(pod("p-2", owner="job"))
    status = next_status(podgroup("g", 3, status={"phase": "Pending"}), pods)
    assert status == {"phase": "Scheduling", "occupiedBy": "ns/job"}


def test_running_counts_and_phases() -> None:
    running = [pod(f"p-{index}", "Running") for index in range(3)]
    assert settle(podgroup("g", 3), running) == ["Pending", "Scheduling", "Running"]
    group = podgroup("g", 3, status={"phase": "Scheduling"})
    assert next_status(group, running) == {"phase": "Running", "running": 3, "succeeded": 0, "failed": 0}
    half = [pod("a", "Running"), pod("b", "Pending"), pod("c", "Pending")]
    assert next_status(group, half) == {"phase": "Scheduling", "running": 1, "succeeded": 0, "failed": 0}


def test_final_phases_and_losing_pods() -> None:
    group = podgroup("g", 2, status={"phase": "Running", "running": 2})

    def phase(pods: list[dict[str, Any]]) -> str:
        status = next_status(group, pods)
        assert status is not None
        return str(status["phase"])

    assert phase([pod("a", "Succeeded"), pod("b", "Succeeded")]) == "Finished"
    assert phase([pod("a", "Failed"), pod("b", "Running")]) == "Failed"
    assert phase([pod("a", "Running")]) == "Pending"  # fewer pods than minMember
    assert next_status(podgroup("g", 2, status={"phase": "Finished"}), []) is None
    assert next_status(podgroup("g", 2, status={"phase": "Failed"}), []) is None


def test_a_group_scheduling_for_over_48_hours_is_left_alone() -> None:
    group = podgroup(
        "g",
        2,
        created="2025-01-01T00:00:00Z",
        status={"phase": "Scheduling", "scheduleStartTime": "2025-01-04T00:00:00Z"},
    )
    assert next_status(group, [pod("a", "Running"), pod("b", "Running")]) is None


def test_patch_is_a_merge_patch_with_zero_counters_omitted() -> None:
    assert status_patch({}, {"phase": "Pending"}) == {"phase": "Pending"}
    old = {"phase": "Running", "running": 3}
    new = {"phase": "Scheduling", "running": 0, "succeeded": 0, "failed": 0}
    assert status_patch(old, new) == {"phase": "Scheduling", "running": None}
    assert status_patch(old, {"phase": "Running", "running": 3, "failed": 0}) == {}


def test_occupied_by_names_every_owner_sorted() -> None:
    obj = pod("a")
    obj["metadata"]["ownerReferences"] = [{"name": "z"}, {"name": "b"}]
    assert occupied_by(obj) == "ns/b,ns/z"
    assert occupied_by(pod("b")) is None


class FakeApi:
    """Answers the controller's status patches as the API server would (a new resourceVersion)."""

    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []
        self.version = 10

    async def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.patches.append(body["status"])
        self.version += 1
        written = podgroup("g", 2)
        written["metadata"]["resourceVersion"] = str(self.version)
        written["status"] = {**(self.last or {}), **body["status"]}
        self.last = written["status"]
        return written

    last: dict[str, Any] | None = None


async def test_the_controllers_writes_reach_the_scheduler_as_podgroup_updates() -> None:
    informer = Informer(PODGROUPS)
    informer.replace([podgroup("g", 2)])
    heard: list[tuple[str, str | None]] = []
    informer.add_listener(
        lambda kind, old, new: heard.append((kind, (new or {}).get("status", {}).get("phase")))
    )
    api = FakeApi()
    controller = PodGroupStatusController(api, informer)  # type: ignore[arg-type]
    controller.event("ADDED", pod("p-0"))
    controller.event("ADDED", pod("p-1"))
    await controller.reconcile("ns/g")
    # The next step reads the written copy, though the watch has not brought it yet.
    await controller.reconcile("ns/g")
    assert [patch["phase"] for patch in api.patches] == ["Pending", "Scheduling"]
    # Nothing assumed into the informer: the watch's event is heard as an update (Coscheduling
    # retries the gangs it rejected on it, as kube-scheduler hears the separate controller's writes).
    written = podgroup("g", 2)
    written["metadata"]["resourceVersion"] = str(api.version)
    written["status"] = api.last
    informer.event("MODIFIED", written)
    assert heard[-1] == ("MODIFIED", "Scheduling")
