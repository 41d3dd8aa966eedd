"""VolumeRestrictions against upstream's behaviour and messages (kube-scheduler 1.34)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.plugins.pluginruns import rejections
from tests.unit.plugins.volumeobjects import claim, nodes, pod_with, pvc_volume

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.events import POD
from secondary_scheduler.framework.status import Code
from secondary_scheduler.plugins.volumerestrictions import VolumeRestrictions
from secondary_scheduler.plugins.volumerestrictions.volume_restrictions import (
    REASON_DISK_CONFLICT,
    REASON_READ_WRITE_ONCE_POD_CONFLICT,
)

JSON = dict[str, Any]


def plugin_with(objects: list[JSON]) -> VolumeRestrictions:
    handle = Handle()
    plugin = VolumeRestrictions(None, handle)
    handle.informers.fill(objects)
    return plugin


def running(name: str, node: str, volumes: list[JSON], namespace: str = "default") -> JSON:
    return pod_with(name, volumes, node_name=node, namespace=namespace)


def disk(kind: str, fields: JSON, read_only: bool = False) -> JSON:
    return {"name": f"{kind}-vol", kind: {**fields, "readOnly": read_only}}


GCE = {"pdName": "pd-1"}
EBS = {"volumeID": "vol-1"}
ISCSI = {"iqn": "iqn.2001-04.com.example:disk", "targetPortal": "10.0.0.1:3260", "lun": 0}
RBD = {"monitors": ["m1", "m2"], "pool": "rbd", "image": "img"}


@pytest.mark.parametrize(
    ("kind", "fields", "mine_read_only", "theirs_read_only", "conflict"),
    [
        ("gcePersistentDisk", GCE, False, False, True),
        ("gcePersistentDisk", GCE, True, False, True),
        ("gcePersistentDisk", GCE, True, True, False),
        ("awsElasticBlockStore", EBS, True, True, True),  # EBS: never two mounts
        ("iscsi", ISCSI, False, True, True),
        ("iscsi", ISCSI, True, True, False),
        ("rbd", RBD, False, False, True),
        ("rbd", RBD, True, True, False),
    ],
)
def test_the_same_disk_twice_on_a_node(
    kind: str, fields: JSON, mine_read_only: bool, theirs_read_only: bool, conflict: bool
) -> None:
    plugin = plugin_with([])
    existing = running("db", "node-1", [disk(kind, fields, theirs_read_only)])
    table = NodeTable.from_objects(nodes(3), [existing])
    pod = PodInfo.from_pod(pod_with("web", [disk(kind, fields, mine_read_only)]))
    expected = {"node-1": [REASON_DISK_CONFLICT]} if conflict else {}
    assert rejections(plugin, pod, table) == expected


@pytest.mark.parametrize(
    "other",
    [
        {"gcePersistentDisk": {"pdName": "pd-2"}},
        {"awsElasticBlockStore": {"volumeID": "vol-2"}},
        {"iscsi": {**ISCSI, "iqn": "iqn.other"}},
        {"rbd": {**RBD, "monitors": ["m3"]}},
        {"rbd": {**RBD, "image": "other"}},
    ],
)
def test_different_disks_do_not_conflict(other: JSON) -> None:
    plugin = plugin_with([])
    ((kind, fields),) = other.items()
    mine = {"gcePersistentDisk": GCE, "awsElasticBlockStore": EBS, "iscsi": ISCSI, "rbd": RBD}[kind]
    table = NodeTable.from_objects(nodes(2), [running("db", "node-1", [{"name": "v", kind: fields}])])
    pod = PodInfo.from_pod(pod_with("web", [{"name": "v", kind: mine}]))
    assert rejections(plugin, pod, table) == {}


def test_a_read_write_once_pod_claim_in_use_anywhere_blocks_every_node() -> None:
    plugin = plugin_with([claim("solo", modes=["ReadWriteOncePod"])])
    table = NodeTable.from_objects(nodes(3), [running("holder", "node-2", [pvc_volume("solo")])])
    pod = PodInfo.from_pod(pod_with("web", [pvc_volume("solo")]))
    assert rejections(plugin, pod, table) == {
        node: [REASON_READ_WRITE_ONCE_POD_CONFLICT] for node in ["node-0", "node-1", "node-2"]
    }
    # Evicting the holder frees the claim (the rejection is resolvable, preemption may help).
    table.remove_pod("default/holder")
    assert rejections(plugin, pod, table) == {}


def test_a_read_write_once_pod_claim_of_the_same_name_in_another_namespace_is_another_claim() -> None:
    plugin = plugin_with([claim("solo", modes=["ReadWriteOncePod"])])
    elsewhere = running("holder", "node-2", [pvc_volume("solo")], namespace="other")
    table = NodeTable.from_objects(nodes(3), [elsewhere])
    pod = PodInfo.from_pod(pod_with("web", [pvc_volume("solo")]))
    assert plugin.pre_filter(CycleState(), pod, table).is_skip


def test_a_read_write_once_claim_is_shared() -> None:
    plugin = plugin_with([claim("shared", modes=["ReadWriteOnce"])])
    table = NodeTable.from_objects(nodes(3), [running("holder", "node-2", [pvc_volume("shared")])])
    pod = PodInfo.from_pod(pod_with("web", [pvc_volume("shared")]))
    assert plugin.pre_filter(CycleState(), pod, table).is_skip


def test_a_missing_claim_fails_the_pod() -> None:
    plugin = plugin_with([])
    pod = PodInfo.from_pod(pod_with("web", [pvc_volume("nope")]))
    status = plugin.pre_filter(CycleState(), pod, NodeTable.from_objects(nodes(1)))
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'persistentvolumeclaim "nope" not found',
    )


def test_disk_conflict_is_reported_before_the_claim_conflict() -> None:
    plugin = plugin_with([claim("solo", modes=["ReadWriteOncePod"])])
    existing = [
        running("holder", "node-0", [pvc_volume("solo")]),
        running("db", "node-1", [disk("awsElasticBlockStore", EBS)]),
    ]
    table = NodeTable.from_objects(nodes(2), existing)
    pod = PodInfo.from_pod(pod_with("web", [pvc_volume("solo"), disk("awsElasticBlockStore", EBS)]))
    assert rejections(plugin, pod, table) == {
        "node-0": [REASON_READ_WRITE_ONCE_POD_CONFLICT],
        "node-1": [REASON_DISK_CONFLICT],
    }


def test_hints() -> None:
    plugin = plugin_with([])
    pod = PodInfo.from_pod(pod_with("web", [pvc_volume("solo"), disk("awsElasticBlockStore", EBS)]))
    hints = {registration.event.resource: registration.hint for registration in plugin.events_to_register()}
    deleted, added = hints[POD], hints["PersistentVolumeClaim"]
    assert deleted is not None and added is not None
    holder = PodInfo.from_pod(running("holder", "node-0", [pvc_volume("solo")]))
    ebs_user = PodInfo.from_pod(running("db", "node-0", [disk("awsElasticBlockStore", EBS)]))
    unrelated = PodInfo.from_pod(running("x", "node-0", [pvc_volume("other")]))
    assert deleted(pod, holder, None)
    assert deleted(pod, ebs_user, None)
    assert not deleted(pod, unrelated, None)
    assert added(pod, None, claim("solo"))
    assert not added(pod, None, claim("solo", namespace="other"))
