"""An unschedulable pod comes back only on events its rejecting plugins registered (queueing hints)."""

from __future__ import annotations

from tests.unit.framework.kubeobjects import default_framework, make_node, pod_info

from secondary_scheduler.framework import ExtensionPoint
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, node_update_actions
from secondary_scheduler.plugins.registry import in_tree_registry

ADDED = ClusterEvent(POD, ActionType.ADD)
DELETED = ClusterEvent(POD, ActionType.DELETE)
NODE_ADDED = ClusterEvent(NODE, ActionType.ADD)


def affinity_to(app: str) -> dict[str, object]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


REJECTING_POINTS = {
    ExtensionPoint.PRE_FILTER,
    ExtensionPoint.FILTER,
    ExtensionPoint.RESERVE,
    ExtensionPoint.PERMIT,
}


def test_every_in_tree_plugin_that_can_reject_says_which_events_can_help() -> None:
    framework = default_framework()
    for name, plugin_class in in_tree_registry().items():
        plugin = framework._instances.get(name)
        if plugin is not None and plugin_class.extension_points() & REJECTING_POINTS:
            assert plugin.events_to_register() is not None, name


def test_a_pod_short_of_room_waits_for_room_not_for_any_binding() -> None:
    framework = default_framework()
    pod = pod_info("big", requests={"cpu": "8"})
    rejectors = frozenset({"NodeResourcesFit"})
    other = pod_info("other", requests={"cpu": "1"})
    assert not framework.worth_requeuing(pod, rejectors, ADDED, None, other)
    assert framework.worth_requeuing(pod, rejectors, DELETED, other, None)
    assert framework.worth_requeuing(pod, rejectors, NODE_ADDED, None, make_node("n"))
    assert not framework.worth_requeuing(
        pod, rejectors, ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), {}, {}
    )


def test_a_pod_waiting_for_its_affinity_partner_comes_back_when_the_partner_appears() -> None:
    framework = default_framework()
    pod = pod_info("web", affinity=affinity_to("db"))
    rejectors = frozenset({"InterPodAffinity"})
    assert framework.worth_requeuing(pod, rejectors, ADDED, None, pod_info("db-0", labels={"app": "db"}))
    assert not framework.worth_requeuing(
        pod, rejectors, ADDED, None, pod_info("cache", labels={"app": "cache"})
    )


def test_spread_waits_only_for_pods_it_counts() -> None:
    framework = default_framework()
    constraint = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    pod = pod_info("web-3", labels={"app": "web"}, topologySpreadConstraints=[constraint])
    rejectors = frozenset({"PodTopologySpread"})
    assert framework.worth_requeuing(pod, rejectors, DELETED, pod_info("web-1", labels={"app": "web"}), None)
    assert not framework.worth_requeuing(pod, rejectors, DELETED, pod_info("db", labels={"app": "db"}), None)


def test_a_rejection_that_named_no_plugin_comes_back_on_any_event() -> None:
    framework = default_framework()
    assert framework.worth_requeuing(pod_info("p"), frozenset(), ADDED, None, pod_info("q"))


def test_node_updates_are_classified_by_what_changed() -> None:
    before = make_node("n", labels={"zone": "a"})
    assert node_update_actions(before, make_node("n", labels={"zone": "b"})) == ActionType.UPDATE_NODE_LABEL
    assert node_update_actions(before, make_node("n", labels={"zone": "a"}, cpu="8")) == (
        ActionType.UPDATE_NODE_ALLOCATABLE
    )
    cordoned = make_node("n", labels={"zone": "a"}, unschedulable=True)
    assert node_update_actions(before, cordoned) == ActionType.UPDATE_NODE_TAINT
    assert node_update_actions(before, make_node("n", labels={"zone": "a"})) == ActionType(0)
