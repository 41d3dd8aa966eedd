"""The slice index the DynamicResources plugin keeps across cycles: a node's pools are gathered
again exactly when the slices it reads (or the node, for slices with a node selector) change."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.plugins.dynamicresources.test_allocator import NODE, OTHER_NODE, device, slice_

from secondary_scheduler.plugins.dynamicresources.pools import SliceIndex, UnsupportedFeature, gather_pools


def device_names(index: SliceIndex, node: dict[str, Any]) -> list[str]:
    return [device_id.device for pool in index.pools(node) for device_id, _, _ in pool.devices]


def test_pools_are_kept_while_the_same_slices_are_listed() -> None:
    slices = [slice_("s1", device("gpu-0")), slice_("s2", device("gpu-9"), node="node-2", pool="pool-2")]
    index = SliceIndex()
    index.refresh(slices)
    first = index.pools(NODE)
    index.refresh(list(slices))
    assert index.pools(NODE) is first
    assert device_names(index, NODE) == ["gpu-0"]
    assert device_names(index, OTHER_NODE) == ["gpu-9"]


def test_a_changed_slice_regathers_only_its_nodes_pools() -> None:
    mine, other = slice_("s1", device("gpu-0")), slice_("s2", device("gpu-9"), node="node-2", pool="pool-2")
    index = SliceIndex()
    index.refresh([mine, other])
    kept, dropped = index.pools(OTHER_NODE), index.pools(NODE)
    index.refresh([slice_("s1", device("gpu-0"), device("gpu-1")), other])
    assert index.pools(OTHER_NODE) is kept
    assert index.pools(NODE) is not dropped
    assert device_names(index, NODE) == ["gpu-0", "gpu-1"]
    index.refresh([other])
    assert device_names(index, NODE) == []


def test_slices_for_several_nodes_are_matched_against_the_current_node_object() -> None:
    zone_a = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
    }
    index = SliceIndex()
    index.refresh([slice_("shared", device("gpu-0"), node=None, nodeSelector=zone_a)])
    assert device_names(index, NODE) == ["gpu-0"]
    moved = {"metadata": {"name": "node-1", "labels": {"zone": "b"}}}
    assert device_names(index, moved) == []
    index.refresh([])
    assert device_names(index, NODE) == []


def test_matches_gather_pools_and_refuses_each_time() -> None:
    gated = slice_("s1", {"name": "gpu-0", "taints": [{"key": "k", "effect": "NoSchedule"}]})
    index = SliceIndex()
    index.refresh([gated])
    for _ in range(2):
        with pytest.raises(UnsupportedFeature):
            index.pools(NODE)
    slices = [slice_("s1", device("gpu-0"), count=2), slice_("s2", device("gpu-1"), count=2)]
    index.refresh(slices)
    assert index.pools(NODE) == gather_pools(slices, NODE)


def test_nodes_served_by_the_same_slices_for_several_nodes_share_their_pools() -> None:
    zone_a = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
    }
    slices = [
        slice_("everywhere", device("nic-0"), node=None, allNodes=True, pool="all"),
        slice_("zone-a", device("gpu-0"), node=None, nodeSelector=zone_a),
    ]
    index = SliceIndex()
    index.refresh(slices)
    one, two = NODE, {"metadata": {"name": "node-9", "labels": {"zone": "a"}}}
    elsewhere = {"metadata": {"name": "node-8", "labels": {"zone": "b"}}}
    assert index.pools(one) is index.pools(two)
    assert index.pools(one) == gather_pools(slices, one)
    assert device_names(index, elsewhere) == ["nic-0"]
    index.refresh(slices[:1])
    assert device_names(index, one) == ["nic-0"]
