"""PodTopologySpread: skew filtering with minDomains and inclusion policies, and spread scoring."""

from __future__ import annotations

from typing import Any

from tests.unit.framework.kubeobjects import make_node, make_pod, pod_info, table_of
from tests.unit.plugins.pluginruns import raw_and_normalized, rejections

from secondary_scheduler.framework import Handle, PodInfo
from secondary_scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

SKEW = "node(s) didn't match pod topology spread constraints"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label) [unresolvable]"
FOO = {"matchLabels": {"foo": ""}}


def zones() -> list[dict[str, Any]]:
    """Zone z1: nodes a, b; zone z2: nodes c, d; node x has no zone label."""
    nodes = [
        make_node(name, labels={"zone": zone, "kubernetes.io/hostname": name})
        for name, zone in (("a", "z1"), ("b", "z1"), ("c", "z2"), ("d", "z2"))
    ]
    return [*nodes, make_node("x", labels={"kubernetes.io/hostname": "x"})]


def foo_pods(*nodes: str, namespace: str = "default") -> list[dict[str, Any]]:
    return [
        make_pod(f"foo-{index}", namespace=namespace, node_name=node, labels={"foo": ""})
        for index, node in enumerate(nodes)
    ]


def constraint(
    max_skew: int = 1, key: str = "zone", when: str = "DoNotSchedule", **fields: Any
) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": FOO,
        **fields,
    }


def spread(*constraints: dict[str, Any], **fields: Any) -> Any:
    return pod_info("p", labels={"foo": ""}, topologySpreadConstraints=list(constraints), **fields)


def test_nodes_whose_zone_would_exceed_max_skew_are_rejected() -> None:
    table = table_of(zones(), foo_pods("a", "a", "c"))
    # z1: 2 + 1 - 1 = 2 > 1; z2: 1 + 1 - 1 = 1
    assert rejections(PodTopologySpread.build(None, Handle()), spread(constraint()), table) == {
        "a": [SKEW],
        "b": [SKEW],
        "x": [MISSING],
    }


def test_a_larger_max_skew_tolerates_it() -> None:
    table = table_of(zones(), foo_pods("a", "a", "c"))
    assert rejections(PodTopologySpread.build(None, Handle()), spread(constraint(max_skew=2)), table) == {
        "x": [MISSING]
    }


def test_min_domains_counts_the_minimum_as_zero_until_reached() -> None:
    table = table_of(zones(), foo_pods("a", "c"))
    # two zones < minDomains 3: minimum is 0, so 1 + 1 - 0 = 2 > 1 everywhere
    rejected = rejections(PodTopologySpread.build(None, Handle()), spread(constraint(minDomains=3)), table)
    assert rejected == {"a": [SKEW], "b": [SKEW], "c": [SKEW], "d": [SKEW], "x": [MISSING]}


def test_pods_elsewhere_and_terminating_pods_do_not_count() -> None:
    leaving = make_pod("leaving", node_name="c", labels={"foo": ""})
    leaving["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    table = table_of(zones(), [*foo_pods("a"), *foo_pods("c", namespace="other"), leaving])
    # counted: z1 = 1, z2 = 0 -> z1 would be at skew 2
    assert rejections(PodTopologySpread.build(None, Handle()), spread(constraint()), table) == {
        "a": [SKEW],
        "b": [SKEW],
        "x": [MISSING],
    }


def test_node_affinity_policy_honor_ignores_zones_the_pod_cannot_use() -> None:
    table = table_of(zones(), foo_pods("a", "a"))
    pod = spread(constraint(), nodeSelector={"zone": "z1"})
    # z2 is excluded by the node selector, so z1 alone sets the minimum: 2 + 1 - 2 = 1
    assert rejections(PodTopologySpread.build(None, Handle()), pod, table) == {"x": [MISSING]}
    ignoring = spread(constraint(nodeAffinityPolicy="Ignore"), nodeSelector={"zone": "z1"})
    assert rejections(PodTopologySpread.build(None, Handle()), ignoring, table) == {
        "a": [SKEW],
        "b": [SKEW],
        "x": [MISSING],
    }


def test_node_taints_policy_honor_ignores_tainted_nodes() -> None:
    nodes = zones()
    nodes[2]["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    nodes[3]["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    table = table_of(nodes, foo_pods("a"))
    honoring = spread(constraint(nodeTaintsPolicy="Honor"))
    assert rejections(PodTopologySpread.build(None, Handle()), honoring, table) == {"x": [MISSING]}
    assert rejections(PodTopologySpread.build(None, Handle()), spread(constraint()), table) == {
        "a": [SKEW],
        "b": [SKEW],
        "x": [MISSING],
    }


def test_match_label_keys_narrow_the_selector_to_the_pods_own_values() -> None:
    pods = [
        make_pod("old-0", node_name="a", labels={"foo": "", "rev": "1"}),
        make_pod("old-1", node_name="a", labels={"foo": "", "rev": "1"}),
        make_pod("new-0", node_name="c", labels={"foo": "", "rev": "2"}),
    ]
    table = table_of(zones(), pods)
    pod = pod_info(
        "p", labels={"foo": "", "rev": "2"}, topologySpreadConstraints=[constraint(matchLabelKeys=["rev"])]
    )
    # only rev=2 counts: z1 = 0, z2 = 1 -> z2 would be at 2 - 0 = 2
    assert rejections(PodTopologySpread.build(None, Handle()), pod, table) == {
        "c": [SKEW],
        "d": [SKEW],
        "x": [MISSING],
    }


def test_schedule_anyway_constraints_do_not_filter() -> None:
    table = table_of(zones(), foo_pods("a", "a", "c"))
    assert (
        rejections(PodTopologySpread.build(None, Handle()), spread(constraint(when="ScheduleAnyway")), table)
        == {}
    )


def test_scoring_prefers_the_emptier_zone() -> None:
    table = table_of(zones(), foo_pods("a", "a"))
    raw, normalized = raw_and_normalized(
        PodTopologySpread.build(None, Handle()),
        spread(constraint(when="ScheduleAnyway")),
        table,
        ["a", "c", "x"],
    )
    # two zones: weight ln(4) = 1.386; a: round(2 * 1.386) = 3, c: 0; x lacks the label: ignored
    assert raw == {"a": 3, "c": 0, "x": 0}
    assert normalized == {"a": 0, "c": 100, "x": 0}


def test_scoring_by_hostname_counts_pods_on_the_node() -> None:
    table = table_of(zones(), foo_pods("a", "b", "b", "b"))
    pod = spread(constraint(max_skew=2, key="kubernetes.io/hostname", when="ScheduleAnyway"))
    raw, normalized = raw_and_normalized(PodTopologySpread.build(None, Handle()), pod, table, ["a", "b", "c"])
    # three nodes: weight ln(5) = 1.609; each node adds maxSkew - 1 = 1
    # a: round(1.609 + 1) = 3, b: round(3 * 1.609 + 1) = 6, c: 1
    assert raw == {"a": 3, "b": 6, "c": 1}
    # 100 * (max + min - score) / max
    assert normalized == {"a": 66, "b": 16, "c": 100}


def test_without_constraints_both_filter_and_score_skip() -> None:
    table = table_of(zones())
    assert rejections(PodTopologySpread.build(None, Handle()), pod_info("p"), table) == {}
    assert raw_and_normalized(PodTopologySpread.build(None, Handle()), pod_info("p"), table) == ({}, {})


REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web-1234", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}
OWNED = {
    "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1234", "controller": True}
    ]
}


def replica(name: str, node: str | None = None) -> dict[str, Any]:
    pod = make_pod(name, node_name=node, labels={"app": "web"})
    pod["metadata"].update(OWNED)
    return pod


def hosts() -> list[dict[str, Any]]:
    return [make_node(name, labels={"kubernetes.io/hostname": name}) for name in ("a", "b")]


def test_system_defaults_spread_a_replica_set_by_hostname() -> None:
    handle = Handle()
    plugin = PodTopologySpread.build(None, handle)
    handle.informers.fill([REPLICA_SET])
    table = table_of(hosts(), [replica(f"web-{index}", "a") for index in range(3)])
    pod = PodInfo.from_pod(replica("web-3"))
    # hostname (maxSkew 3, weight ln 4): a = round(3 * 1.386 + 2) = 6, b = 2; the zone
    # constraint adds nothing (no zone labels) but, under the system defaults, ignores no node.
    assert raw_and_normalized(plugin, pod, table) == ({"a": 6, "b": 2}, {"a": 33, "b": 100})


def test_a_pod_nothing_selects_gets_no_default_constraints() -> None:
    handle = Handle()
    plugin = PodTopologySpread.build(None, handle)
    table = table_of(hosts(), [replica(f"web-{index}", "a") for index in range(3)])
    assert raw_and_normalized(plugin, pod_info("lonely", labels={"app": "web"}), table) == ({}, {})


def test_list_defaults_with_do_not_schedule_filter_replicas() -> None:
    handle = Handle()
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    plugin = PodTopologySpread.build(args, handle)
    handle.informers.fill([REPLICA_SET])
    table = table_of(hosts(), [replica("web-0", "a")])
    assert rejections(plugin, PodInfo.from_pod(replica("web-1")), table) == {"a": [SKEW]}
