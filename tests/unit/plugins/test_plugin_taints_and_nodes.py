"""TaintToleration, NodeUnschedulable, NodeName, NodePorts, ImageLocality, PrioritySort, SchedulingGates."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from tests.unit.framework.kubeobjects import container, make_node, make_pod, pod_info, table_of
from tests.unit.plugins.pluginruns import raw_and_normalized, rejections, scores

from secondary_scheduler.framework import Handle, PodInfo
from secondary_scheduler.framework.taints import Taint, Toleration
from secondary_scheduler.plugins.imagelocality import ImageLocality
from secondary_scheduler.plugins.imagelocality.image_locality import normalized_image_name
from secondary_scheduler.plugins.nodename import NodeName
from secondary_scheduler.plugins.nodeports import NodePorts
from secondary_scheduler.plugins.nodeunschedulable import NodeUnschedulable
from secondary_scheduler.plugins.prioritysort import PrioritySort
from secondary_scheduler.plugins.tainttoleration import TaintToleration

HANDLE = Handle()
UNTOLERATED = "node(s) had untolerated taint(s) [unresolvable]"


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerates"),
    [
        (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True),
        (Toleration("k", "", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True),  # "" means Equal
        (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "w", "NoSchedule"), False),
        (Toleration("k", "Exists", "", "NoSchedule"), Taint("k", "anything", "NoSchedule"), True),
        (Toleration("k", "Exists", "", ""), Taint("k", "v", "NoExecute"), True),  # no effect: every effect
        (Toleration("k", "Exists", "", "NoSchedule"), Taint("k", "v", "NoExecute"), False),
        (Toleration("", "Exists", "", ""), Taint("any", "thing", "NoSchedule"), True),  # tolerates everything
        (Toleration("other", "Exists", "", ""), Taint("k", "v", "NoSchedule"), False),
        (Toleration("k", "Gt", "1", ""), Taint("k", "2", "NoSchedule"), False),  # unknown operator
    ],
)
def test_toleration_matching(toleration: Toleration, taint: Taint, tolerates: bool) -> None:
    assert toleration.tolerates(taint) is tolerates


def test_taints_that_forbid_scheduling_filter_and_prefer_no_schedule_does_not() -> None:
    table = table_of(
        [
            make_node("clean"),
            make_node("dedicated", taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
            make_node("draining", taints=[{"key": "drain", "effect": "NoExecute"}]),
            make_node("soft", taints=[{"key": "spot", "effect": "PreferNoSchedule"}]),
        ]
    )
    plugin = TaintToleration(None, HANDLE)
    assert rejections(plugin, pod_info("p"), table) == {"dedicated": [UNTOLERATED], "draining": [UNTOLERATED]}
    tolerant = pod_info("p", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "db"}])
    assert rejections(plugin, tolerant, table) == {"draining": [UNTOLERATED]}


def test_untolerated_prefer_no_schedule_taints_lower_the_score() -> None:
    soft = {"key": "spot", "effect": "PreferNoSchedule"}
    table = table_of(
        [
            make_node("none"),
            make_node("one", taints=[soft]),
            make_node("two", taints=[soft, {"key": "old", "effect": "PreferNoSchedule"}]),
            make_node("hard", taints=[{"key": "x", "effect": "NoSchedule"}]),
        ]
    )
    plugin = TaintToleration(None, HANDLE)
    raw, normalized = raw_and_normalized(plugin, pod_info("p"), table)
    assert raw == {"none": 0, "one": 1, "two": 2, "hard": 0}
    assert normalized == {"none": 100, "one": 50, "two": 0, "hard": 100}
    # a toleration limited to NoSchedule does not help with PreferNoSchedule taints
    narrow = pod_info("p", tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}])
    assert raw_and_normalized(plugin, narrow, table)[0]["one"] == 1
    wide = pod_info("p", tolerations=[{"key": "spot", "operator": "Exists"}])
    assert raw_and_normalized(plugin, wide, table)[0] == {"none": 0, "one": 0, "two": 1, "hard": 0}


def test_cordoned_nodes_take_only_pods_tolerating_the_unschedulable_taint() -> None:
    table = table_of([make_node("cordoned", unschedulable=True), make_node("open")])
    plugin = NodeUnschedulable(None, HANDLE)
    assert rejections(plugin, pod_info("p"), table) == {
        "cordoned": ["node(s) were unschedulable [unresolvable]"]
    }
    tolerant = pod_info(
        "p",
        tolerations=[
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
        ],
    )
    assert rejections(plugin, tolerant, table) == {}


def test_node_name_pins_the_pod() -> None:
    table = table_of([make_node("a"), make_node("b")])
    reason = "node(s) didn't match the requested node name [unresolvable]"
    assert rejections(NodeName(None, HANDLE), pod_info("p", node_name="b"), table) == {"a": [reason]}
    assert rejections(NodeName(None, HANDLE), pod_info("p", node_name="gone"), table) == {
        "a": [reason],
        "b": [reason],
    }
    assert rejections(NodeName(None, HANDLE), pod_info("p"), table) == {}


def with_port(
    name: str, port: int, *, ip: str | None = None, protocol: str | None = None, **fields: object
) -> dict:
    spec = {"containerPort": port, "hostPort": port}
    if ip:
        spec["hostIP"] = ip
    if protocol:
        spec["protocol"] = protocol
    return make_pod(name, containers=[container(ports=[spec])], **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        ({}, {}, True),
        ({}, {"protocol": "UDP"}, False),
        ({"ip": "10.0.0.1"}, {}, True),  # 0.0.0.0 collides with any address
        ({}, {"ip": "10.0.0.1"}, True),  # ... and the other way round
        ({"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, False),
        ({"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}, True),
    ],
)
def test_host_port_conflicts(used: dict[str, str], wanted: dict[str, str], conflict: bool) -> None:
    table = table_of([make_node("a")], [with_port("web", 8080, node_name="a", **used)])
    pod = PodInfo.from_pod(with_port("p", 8080, **wanted))
    expected = {"a": ["node(s) didn't have free ports for the requested pod ports"]} if conflict else {}
    assert rejections(NodePorts(None, HANDLE), pod, table) == expected


def test_sidecar_host_ports_count() -> None:
    sidecar = container("proxy", restart_policy="Always", ports=[{"containerPort": 9000, "hostPort": 9000}])
    table = table_of([make_node("a")], [make_pod("mesh", node_name="a", initContainers=[sidecar])])
    assert rejections(NodePorts(None, HANDLE), PodInfo.from_pod(with_port("p", 9000)), table) == {
        "a": ["node(s) didn't have free ports for the requested pod ports"]
    }


def test_image_names_get_latest_when_untagged() -> None:
    assert normalized_image_name("nginx") == "nginx:latest"
    assert normalized_image_name("nginx:1.27") == "nginx:1.27"
    assert normalized_image_name("localhost:5000/app") == "localhost:5000/app:latest"


def test_image_locality_scales_image_sizes_by_their_spread() -> None:
    mib = 1024 * 1024
    nodes = [
        make_node("has-big", images=[{"names": ["big:1"], "sizeBytes": 250 * mib}]),
        make_node("has-small", images=[{"names": ["small:1"], "sizeBytes": 30 * mib}]),
        make_node("bare"),
        make_node("also-big", images=[{"names": ["big:1"], "sizeBytes": 250 * mib}]),
    ]
    pod = pod_info("p", containers=[container(image="big:1"), container("b", image="small:1")])
    # big: 250 MiB on 2 of 4 nodes -> 125 MiB; score 100 * (125 - 23) / (2000 - 23) = 5
    # small: 30 MiB on 1 of 4 nodes -> 7.5 MiB, under the 23 MiB floor -> 0
    assert scores(ImageLocality(None, HANDLE), pod, table_of(nodes)) == {
        "has-big": 5,
        "has-small": 0,
        "bare": 0,
        "also-big": 5,
    }


@dataclass
class Queued:
    pod: PodInfo
    timestamp: float


def test_priority_sort_orders_by_priority_then_queue_time() -> None:
    less = PrioritySort(None, HANDLE).less
    high, low = pod_info("high", priority=100), pod_info("low", priority=10)
    assert less(Queued(high, 2.0), Queued(low, 1.0))
    assert not less(Queued(low, 1.0), Queued(high, 2.0))
    assert less(Queued(low, 1.0), Queued(low, 2.0))
    assert not less(Queued(low, 2.0), Queued(low, 2.0))
