"""Coscheduling's rules in memory: queue order, PreFilter, Permit counting, PostFilter, Unreserve, backoff."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from pydantic import ValidationError
from tests.unit.framework.kubeobjects import make_node, table_of
from tests.unit.plugins.coscheduling.gang import Clocks, member, plugin_with, podgroup

from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import Code
from secondary_scheduler.plugins.coscheduling.args import CoschedulingArgs
from secondary_scheduler.plugins.coscheduling.plugin import Coscheduling
from secondary_scheduler.plugins.coscheduling.podgroup import PODGROUPS

NODES = [make_node("n1", cpu="4", pods=10), make_node("n2", cpu="4", pods=10)]


@dataclass
class Queued:
    pod: PodInfo
    timestamp: float
    initial_timestamp: float


def gang(name: str, size: int, group: str = "g", **fields: object) -> list[dict[str, object]]:
    return [member(f"{name}-{index}", group, **fields) for index in range(size)]  # type: ignore[arg-type]


def info(pod: dict[str, object]) -> PodInfo:
    return PodInfo.from_pod(pod)


# -- args ------------------------------------------------------------------------------------


def test_args_default_as_upstream() -> None:
    args = CoschedulingArgs.model_validate({})
    assert (
        args.permit_waiting_time_seconds,
        args.pod_group_backoff_seconds,
        args.pod_group_reject_percentage,
    ) == (
        60,
        0,
        10,
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("permitWaitingTimeSeconds", -1, "Invalid value: -1: must be greater than 0"),
        ("podGroupBackoffSeconds", -5, "Invalid value: -5: must be greater than 0"),
        ("podGroupRejectPercentage", 101, "Invalid value: 101: must be between 0 and 100"),
        ("podGroupRejectPercentage", -1, "Invalid value: -1: must be between 0 and 100"),
    ],
)
def test_args_are_validated_as_upstream(field: str, value: int, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Coscheduling.build({field: value}, Handle())


def test_unknown_and_mistyped_args_are_refused() -> None:
    with pytest.raises(ValidationError):
        CoschedulingArgs.model_validate({"permitWaitingTime": 5})
    with pytest.raises(ValidationError):
        CoschedulingArgs.model_validate({"permitWaitingTimeSeconds": "5"})


# -- QueueSort -------------------------------------------------------------------------------


def test_less_orders_by_priority_then_gang_time_then_name() -> None:
    clocks = Clocks()
    older = podgroup("old", 2, created="2025-01-01T00:00:00Z")
    newer = podgroup("new", 2, created="2025-01-02T00:00:00Z")
    plugin, _ = plugin_with([older, newer], [], clocks=clocks)
    now = clocks.mono

    def queued(pod: dict[str, object], initial: float = now) -> Queued:
        return Queued(info(pod), initial, initial)

    old_b, old_a = queued(member("b", "old")), queued(member("a", "old"))
    new_a = queued(member("a0", "new"))
    urgent = queued(member("z", "new", priorityClassName="x", priority=10))
    assert plugin.less(urgent, old_a) and not plugin.less(old_a, urgent)
    assert plugin.less(old_b, new_a)  # the older PodGroup first, whatever the pod names
    assert plugin.less(old_a, old_b) and not plugin.less(old_b, old_a)  # same gang: by namespace/name
    # A pod without a gang counts from its first attempt (wall clock): after both PodGroups here.
    loner = queued(member("loner", None))
    assert plugin.less(new_a, loner)
    # Without its PodGroup a labelled pod also counts from its first attempt.
    orphan_early = queued(member("orphan", "missing"), initial=now - 1e9)
    assert plugin.less(orphan_early, old_a)


def test_a_gang_that_failed_goes_behind_the_others_until_it_succeeds() -> None:
    clocks = Clocks()
    plugin, _ = plugin_with(
        [
            podgroup("first", 2, created="2025-01-01T00:00:00Z"),
            podgroup("second", 2, created="2025-01-02T00:00:00Z"),
        ],
        [],
        clocks=clocks,
    )
    first = Queued(info(member("f", "first")), clocks.mono, clocks.mono)
    second = Queued(info(member("s", "second")), clocks.mono, clocks.mono)
    assert plugin.less(first, second)
    plugin.manager.mark_failure("ns/first")
    assert plugin.less(second, first)
    plugin.manager.clear_failure("ns/first")
    assert plugin.less(first, second)


# -- PreFilter -------------------------------------------------------------------------------


def test_pre_filter_passes_pods_without_a_gang_or_without_their_podgroup() -> None:
    plugin, _ = plugin_with([], [])
    table = table_of(NODES)
    assert plugin.pre_filter(CycleState(), info(member("free", None)), table).is_success
    assert plugin.pre_filter(CycleState(), info(member("orphan", "nope")), table).is_success


def test_pre_filter_waits_for_min_member_pods_and_explains_it() -> None:
    pods = gang("p", 2)
    plugin, _ = plugin_with([podgroup("g", 3)], pods)
    state = CycleState()
    status = plugin.pre_filter(state, info(pods[0]), table_of(NODES))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == (
        "pre-filter pod p-0 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
    )
    assert state.notes["Coscheduling"].lines() == [f"PreFilter rejects the pod: {status.message}"]
    plugin.manager.event("ADDED", member("p-2", "g"))
    assert plugin.pre_filter(CycleState(), info(pods[0]), table_of(NODES)).is_success


def test_pre_filter_counts_gated_pods_against_the_spare_ones() -> None:
    pods = [*gang("p", 3), member("gated", "g", schedulingGates=[{"name": "wait"}])]
    plugin, _ = plugin_with([podgroup("g", 3)], pods)
    assert plugin.pre_filter(CycleState(), info(pods[0]), table_of(NODES)).is_success  # 4 pods, 1 gated
    plugin, _ = plugin_with([podgroup("g", 4)], pods)  # 4 pods, but only 3 may be scheduled
    status = plugin.pre_filter(CycleState(), info(pods[0]), table_of(NODES))
    assert status.message == "pre-filter pod p-0 cannot proceed due to gated pods in the same PodGroup"


def test_pre_filter_checks_min_resources_against_free_room_and_remembers_a_pass() -> None:
    pods = gang("p", 2)
    busy = member("busy", None, cpu="3", node="n1")
    plugin, _ = plugin_with([podgroup("g", 2, min_resources={"cpu": "6"})], pods)
    table = table_of(NODES, [busy])  # 1 + 4 cpu free
    status = plugin.pre_filter(CycleState(), info(pods[0]), table)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == "resource gap: map[cpu:1]"
    roomy = table_of(NODES)  # 8 cpu free
    assert plugin.pre_filter(CycleState(), info(pods[0]), roomy).is_success
    # Within permitWaitingTimeSeconds the check is not repeated, as upstream's permittedPG cache.
    assert plugin.pre_filter(CycleState(), info(pods[1]), table).is_success


def test_min_resources_count_the_gangs_own_pods_as_free_and_pods_as_a_resource() -> None:
    pods = gang("p", 3)
    placed = member("p-0", "g", cpu="3", node="n1")
    plugin, _ = plugin_with([podgroup("g", 3, min_resources={"cpu": "8"})], [placed, *pods[1:]])
    assert plugin.pre_filter(CycleState(), info(pods[1]), table_of(NODES, [placed])).is_success
    few_slots = [make_node("n1", cpu="64", pods=1), make_node("n2", cpu="64", pods=1)]
    plugin, _ = plugin_with([podgroup("g", 3, min_resources={"cpu": "1"})], pods)
    status = plugin.pre_filter(CycleState(), info(pods[0]), table_of(few_slots))
    assert status.message == "resource gap: map[pods:1]"


def test_a_backed_off_gang_is_refused_until_the_backoff_ends() -> None:
    clocks = Clocks()
    pods = gang("p", 2)
    plugin, _ = plugin_with([podgroup("g", 2)], pods, {"podGroupBackoffSeconds": 5}, clocks)
    plugin.manager.backoff("ns/g", 5)
    status = plugin.pre_filter(CycleState(), info(pods[0]), table_of(NODES))
    assert status.message == "podGroup ns/g failed recently"
    clocks.tick(5.1)
    assert plugin.pre_filter(CycleState(), info(pods[0]), table_of(NODES)).is_success


# -- Permit ----------------------------------------------------------------------------------


async def test_permit_holds_the_gang_until_min_member_then_allows_every_waiting_pod() -> None:
    pods = gang("p", 3)
    plugin, activated = plugin_with([podgroup("g", 3, timeout=7)], pods)
    waiting = []
    for pod in pods[:2]:
        status, timeout = plugin.permit(CycleState(), info(pod), "n1")
        assert status.code == Code.WAIT and timeout == 7
        waiting.append(plugin.handle.waiting_pods.add(info(pod), "n1", {"Coscheduling": timeout}))
    # Only the gang's first placed pod activates its siblings (the others, not itself).
    assert [[pod.name for pod in batch] for batch in activated] == [["p-1", "p-2"]]
    assert plugin.manager.assigned_count("ns/g") == 2
    status, timeout = plugin.permit(CycleState(), info(pods[2]), "n2")
    assert status.is_success and timeout == 0
    results = [await asyncio.wait_for(one.wait(), 1) for one in waiting]
    assert all(result.is_success for result in results)


def test_permit_passes_pods_without_a_gang_and_refuses_a_missing_podgroup() -> None:
    plugin, _ = plugin_with([], [])
    assert plugin.permit(CycleState(), info(member("free", None)), "n1")[0].is_success
    status, _ = plugin.permit(CycleState(), info(member("orphan", "nope")), "n1")
    assert status.code == Code.UNSCHEDULABLE and status.message == "PodGroup not found"


@pytest.mark.parametrize(
    ("group_timeout", "args", "expected"),
    [
        (None, {}, 60.0),
        (None, {"permitWaitingTimeSeconds": 9}, 9.0),
        (None, {"permitWaitingTimeSeconds": 0}, 60.0),  # util.DefaultWaitTime
        (4, {"permitWaitingTimeSeconds": 9}, 4.0),
        (0, {"permitWaitingTimeSeconds": 9}, 9.0),  # a zero PodGroup timeout falls back to the args
    ],
)
def test_permit_wait_follows_upstream_precedence(
    group_timeout: int | None, args: dict[str, int], expected: float
) -> None:
    pods = gang("p", 2)
    plugin, _ = plugin_with([podgroup("g", 2, timeout=group_timeout)], pods, args)
    status, timeout = plugin.permit(CycleState(), info(pods[0]), "n1")
    assert status.code == Code.WAIT and timeout == expected


def test_bound_pods_count_as_assigned_and_leave_when_deleted() -> None:
    bound = member("p-0", "g", node="n1")
    plugin, _ = plugin_with([podgroup("g", 2)], [bound, member("p-1", "g")])
    assert plugin.manager.assigned_count("ns/g") == 1
    status, _ = plugin.permit(CycleState(), info(member("p-1", "g")), "n2")
    assert status.is_success
    plugin.manager.event("DELETED", bound)
    assert plugin.manager.assigned_count("ns/g") == 1


# -- PostFilter and Unreserve ------------------------------------------------------------------


async def test_post_filter_rejects_the_waiting_gang_backs_it_off_and_says_why() -> None:
    clocks = Clocks()
    pods = gang("p", 8)
    plugin, _ = plugin_with([podgroup("g", 8)], pods, {"podGroupBackoffSeconds": 30}, clocks)
    waiting = []
    for pod in pods[:5]:
        _, timeout = plugin.permit(CycleState(), info(pod), "n1")
        waiting.append(plugin.handle.waiting_pods.add(info(pod), "n1", {"Coscheduling": timeout}))
    state = CycleState()
    result = plugin.post_filter(state, info(pods[5]), table_of(NODES), Diagnosis(2))
    assert result.status.code == Code.UNSCHEDULABLE
    assert (
        result.status.message
        == "PodGroup ns/g gets rejected due to Pod p-5 is unschedulable even after PostFilter"
    )
    for one in waiting:
        rejected = await asyncio.wait_for(one.wait(), 1)
        assert rejected.message == "optimistic rejection in PostFilter" and rejected.plugin == "Coscheduling"
    assert "ns/g" in plugin.manager.backed_off
    assert plugin.manager.last_failed["ns/g"] == clocks.wall
    assert state.notes["Coscheduling"].lines() == [
        "PostFilter rejects the gang: 5 of minMember 8 assigned; 5 waiting pod(s) rejected; backed off 30s"
    ]


def test_post_filter_keeps_a_gang_that_is_nearly_complete_or_complete() -> None:
    pods = gang("p", 10)
    plugin, _ = plugin_with([podgroup("g", 10)], pods)  # podGroupRejectPercentage 10
    for pod in pods[:9]:
        plugin.permit(CycleState(), info(pod), "n1")
    result = plugin.post_filter(CycleState(), info(pods[9]), table_of(NODES), Diagnosis(2))
    assert result.status.code == Code.UNSCHEDULABLE and result.status.message == ""
    assert "ns/g" not in plugin.manager.last_failed
    plugin.permit(CycleState(), info(pods[9]), "n1")
    assert plugin.post_filter(CycleState(), info(pods[0]), table_of(NODES), Diagnosis(2)).status.message == ""


def test_post_filter_without_a_podgroup() -> None:
    plugin, _ = plugin_with([], [])
    result = plugin.post_filter(CycleState(), info(member("o", "nope")), table_of(NODES), Diagnosis(2))
    assert result.status.message == "can not find pod group"


def test_no_backoff_without_enough_pods_or_without_the_arg() -> None:
    pods = gang("p", 2)
    plugin, _ = plugin_with([podgroup("g", 3)], pods, {"podGroupBackoffSeconds": 30})
    plugin.post_filter(CycleState(), info(pods[0]), table_of(NODES), Diagnosis(2))
    assert "ns/g" not in plugin.manager.backed_off  # 2 pods < minMember 3
    plugin, _ = plugin_with([podgroup("g", 2)], pods)
    plugin.post_filter(CycleState(), info(pods[0]), table_of(NODES), Diagnosis(2))
    assert "ns/g" not in plugin.manager.backed_off and "ns/g" in plugin.manager.last_failed


async def test_unreserve_releases_the_pod_and_rejects_the_gangs_waiting_pods() -> None:
    pods = [*gang("p", 3), member("other", "h")]
    plugin, _ = plugin_with([podgroup("g", 3), podgroup("h", 2)], pods)
    plugin.permit(CycleState(), info(pods[0]), "n1")
    sibling = plugin.handle.waiting_pods.add(info(pods[0]), "n1", {"Coscheduling": 30})
    plugin.permit(CycleState(), info(pods[3]), "n1")
    stranger = plugin.handle.waiting_pods.add(info(pods[3]), "n1", {"Coscheduling": 30})
    plugin.permit(CycleState(), info(pods[1]), "n2")
    plugin.unreserve(CycleState(), info(pods[1]), "n2")
    assert (await asyncio.wait_for(sibling.wait(), 1)).message == "rejection in Unreserve"
    assert stranger.pending_plugins == ["Coscheduling"]  # another gang is left alone
    assert plugin.manager.assigned == {"ns/g": {"p-0"}, "ns/h": {"other"}}
    assert "ns/g" in plugin.manager.last_failed


def test_events_that_retry_a_gang() -> None:
    plugin, _ = plugin_with([], [])
    labels = {(event.event.resource, int(event.event.actions)) for event in plugin.events_to_register()}
    assert ("Pod", 1) in labels
    assert any(resource == PODGROUPS.kind for resource, _ in labels)


def test_handle_activate_reaches_the_activator_and_is_a_no_op_in_memory() -> None:
    seen: list[list[PodInfo]] = []
    Handle(activator=seen.append).activate(iter([info(member("a", "g"))]))
    assert [[pod.name for pod in batch] for batch in seen] == [["a"]]
    Handle().activate([info(member("a", "g"))])
