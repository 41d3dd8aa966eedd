"""Which pods the next leader writes a missing Scheduled Event for (``scheduler.eventrecovery``)."""

from __future__ import annotations

from typing import Any

from secondary_scheduler.kube.events.objects import stamp
from secondary_scheduler.scheduler.eventrecovery import RecentlyBound, bound_by_binding

NOW = 1_800_000_000.0
OURS = frozenset({"ours"})


def pod(
    name: str,
    *,
    bound_at: float | None = NOW - 10,
    scheduler: str = "ours",
    node: str | None = "node-1",
    managed_node_name: bool = False,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if managed_node_name:
        meta["managedFields"] = [
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {"f:nodeName": {}}}}
        ]
    if deleting:
        meta["deletionTimestamp"] = stamp(NOW, fraction=False)
    conditions = []
    if bound_at is not None:
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(bound_at, fraction=False)}
        )
    spec: dict[str, Any] = {"schedulerName": scheduler}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"conditions": conditions}}


def test_a_pod_bound_by_a_binding_for_our_profile_is_kept_with_when() -> None:
    bound = bound_by_binding(pod("a"), OURS)
    assert bound is not None
    assert (bound.namespace, bound.name, bound.uid, bound.node, bound.scheduler_name) == (
        "ns",
        "a",
        "uid-a",
        "node-1",
        "ours",
    )
    assert bound.bound_at == NOW - 10


def test_pods_no_binding_of_ours_put_on_a_node_are_not() -> None:
    assert bound_by_binding(pod("other", scheduler="default-scheduler"), OURS) is None
    assert bound_by_binding(pod("pending", node=None, bound_at=None), OURS) is None
    assert bound_by_binding(pod("created-on-node", managed_node_name=True), OURS) is None
    assert bound_by_binding(pod("going", deleting=True), OURS) is None
    assert bound_by_binding(pod("no-condition", bound_at=None), OURS) is None


def test_take_keeps_the_window_before_leading_and_then_stops_observing() -> None:
    clock = [NOW]
    recent = RecentlyBound(OURS, window=300, clock=lambda: clock[0])
    recent.replace(
        [pod("old", bound_at=NOW - 400), pod("recent", bound_at=NOW - 100), pod("other", scheduler="x")]
    )
    recent.event("MODIFIED", pod("later", bound_at=NOW - 5))
    recent.event("DELETED", pod("recent", bound_at=NOW - 100))
    assert list(recent.pods) == ["uid-later"]  # the list's old pod never kept, the deleted one gone
    assert [bound.name for bound in recent.take()] == ["later"]
    recent.event("MODIFIED", pod("mine", bound_at=NOW))
    assert recent.take() == []


def test_a_standby_forgets_what_the_window_left_behind() -> None:
    clock = [NOW]
    recent = RecentlyBound(OURS, window=300, clock=lambda: clock[0])
    for minute in range(60):
        clock[0] = NOW + minute * 60
        recent.event("MODIFIED", pod(f"p{minute}", bound_at=clock[0]))
    assert len(recent.pods) == 6  # bound 0-5 minutes ago, the edge kept
    assert [bound.name for bound in recent.take()] == ["p54", "p55", "p56", "p57", "p58", "p59"]
