"""The local cluster's topology exporter, in memory: zones split evenly, pods admitted as a kubelet would."""

from __future__ import annotations

import pytest
from tests.unit.plugins.noderesourcetopology.nrtobjects import container, guaranteed, pod

from secondary_scheduler.plugins.noderesourcetopology import fingerprint
from secsched_devtools.cluster.nodes import NodeShape, node_manifest
from secsched_devtools.cluster.topologyexporter import (
    NodeAccount,
    ShapeError,
    account,
    node_shape,
    topology_object,
)


def cpu_available(obj: dict) -> list[str]:
    return [next(i["available"] for i in z["resources"] if i["name"] == "cpu") for z in obj["zones"]]


def publish(node: dict, pods: list[dict], memory: NodeAccount | None = None) -> dict:
    shape = node_shape(node)
    zones, running = account(node, pods, memory or NodeAccount(), shape)
    return topology_object(node, shape, zones, running)


def on(p: dict, node: str = "n", stamp: str = "2025-01-01T00:00:00Z") -> dict:
    return {
        **p,
        "metadata": {**p["metadata"], "creationTimestamp": stamp},
        "spec": {**p["spec"], "nodeName": node},
        "status": {"phase": "Running"},
    }


def test_zones_split_the_node_evenly_and_say_the_policy() -> None:
    node = node_manifest("n", NodeShape(numa_zones=4), "zone-a")
    obj = publish(node, [])
    assert [z["name"] for z in obj["zones"]] == ["node-0", "node-1", "node-2", "node-3"]
    assert cpu_available(obj) == ["3975m"] * 4
    assert {a["name"]: a["value"] for a in obj["attributes"]}["topologyManagerPolicy"] == "single-numa-node"
    assert obj["zones"][0]["costs"][:2] == [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}]


def test_guaranteed_pods_take_whole_cpus_from_the_lowest_zone_that_fits() -> None:
    node = node_manifest("n", NodeShape(), "zone-a")
    pods = [on(guaranteed("a", "7"), stamp="1"), on(guaranteed("b", "4"), stamp="2")]
    obj = publish(node, pods)
    assert cpu_available(obj) == ["950m", "3950m"]
    signed = {a["name"]: a["value"] for a in obj["attributes"]}[fingerprint.ATTRIBUTE]
    assert signed == fingerprint.sign([("ns", "a"), ("ns", "b")])


def test_shared_cpus_and_burstable_pods_take_no_cpu_from_a_zone() -> None:
    node = node_manifest("n", NodeShape(), "zone-a")
    burstable = on(pod("b", container("app", "3", "1Gi", guaranteed=False)))
    fractional = on(guaranteed("f", "1500m"))
    assert cpu_available(publish(node, [burstable, fractional])) == ["7950m", "7950m"]


def test_pods_keep_their_zone_and_a_pod_no_zone_fits_takes_nothing() -> None:
    node = node_manifest("n", NodeShape(), "zone-a")
    memory = NodeAccount()
    first = on(guaranteed("a", "5"), stamp="1")
    publish(node, [first], memory)
    second = on(guaranteed("b", "5"), stamp="2")
    third = on(guaranteed("c", "5"), stamp="3")
    assert cpu_available(publish(node, [first, second, third], memory)) == ["2950m", "2950m"]
    assert memory.rejected == {"uid-c"}
    assert cpu_available(publish(node, [second], memory)) == ["7950m", "2950m"]  # a left; b stays in zone 1


def test_bad_labels_are_refused_with_the_fix() -> None:
    node = node_manifest("n", NodeShape(), "zone-a")
    node["metadata"]["labels"]["secsched.io/numa-zones"] = "many"
    with pytest.raises(ShapeError, match=r"secsched\.io/numa-zones=.many."):
        node_shape(node)
