"""VolumeZone, against upstream's behaviour and messages (kube-scheduler 1.34's volumezone)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.framework.kubeobjects import make_node
from tests.unit.plugins.pluginruns import rejections
from tests.unit.plugins.volumeobjects import (
    HOSTNAME,
    REGION,
    ZONE,
    claim,
    pod_with,
    pvc_volume,
    storage_class,
    volume,
)

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.status import Code
from secondary_scheduler.plugins.volumezone import VolumeZone
from secondary_scheduler.plugins.volumezone.volume_zone import REASON_CONFLICT

JSON = dict[str, Any]
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
CONFLICT = [REASON_CONFLICT + " [unresolvable]"]


def plugin_with(objects: list[JSON]) -> VolumeZone:
    handle = Handle()
    plugin = VolumeZone(None, handle)
    handle.informers.fill(objects)
    return plugin


def pod_using(*claims: str) -> PodInfo:
    return PodInfo.from_pod(pod_with("web", [pvc_volume(c) for c in claims]))


def table(*node_labels: dict[str, str]) -> NodeTable:
    return NodeTable.from_objects(
        [
            make_node(f"node-{i}", labels={HOSTNAME: f"node-{i}", **labels})
            for i, labels in enumerate(node_labels)
        ]
    )


def zonal_pv(name: str, labels: dict[str, str]) -> JSON:
    return volume(name, labels=labels, claim_ref={"name": "data", "namespace": "default"}, phase="Bound")


def test_a_zonal_volume_keeps_the_pod_in_its_zone() -> None:
    plugin = plugin_with([claim("data", volume_name="pv-1", bound=True), zonal_pv("pv-1", {ZONE: "b"})])
    nodes = table({ZONE: "a"}, {ZONE: "b"}, {ZONE: "c"})
    assert rejections(plugin, pod_using("data"), nodes) == {"node-0": CONFLICT, "node-2": CONFLICT}


def test_a_node_without_zone_labels_passes() -> None:
    """A single-zone cluster's nodes may carry no topology labels at all."""
    plugin = plugin_with([claim("data", volume_name="pv-1", bound=True), zonal_pv("pv-1", {ZONE: "b"})])
    nodes = table({}, {"other": "x"}, {REGION: "r1"})
    assert rejections(plugin, pod_using("data"), nodes) == {"node-2": CONFLICT}


def test_multi_zone_values_and_regions() -> None:
    labels = {ZONE: "a__b", REGION: "r1"}
    plugin = plugin_with([claim("data", volume_name="pv-1", bound=True), zonal_pv("pv-1", labels)])
    nodes = table(
        {ZONE: "a", REGION: "r1"}, {ZONE: "b", REGION: "r1"}, {ZONE: "b", REGION: "r2"}, {ZONE: "c"}
    )
    assert rejections(plugin, pod_using("data"), nodes) == {"node-2": CONFLICT, "node-3": CONFLICT}


def test_a_beta_volume_label_is_matched_against_the_nodes_ga_label() -> None:
    plugin = plugin_with(
        [claim("data", volume_name="pv-1", bound=True), zonal_pv("pv-1", {BETA_ZONE: "a", BETA_REGION: "r"})]
    )
    nodes = table({ZONE: "a", REGION: "r"}, {BETA_ZONE: "a", BETA_REGION: "r"}, {ZONE: "b", REGION: "r"})
    assert rejections(plugin, pod_using("data"), nodes) == {"node-2": CONFLICT}


def test_a_malformed_zone_label_is_ignored() -> None:
    plugin = plugin_with([claim("data", volume_name="pv-1", bound=True), zonal_pv("pv-1", {ZONE: "a__"})])
    state = CycleState()
    assert plugin.pre_filter(state, pod_using("data"), table({ZONE: "b"})).is_skip


def test_unbound_wait_for_first_consumer_claims_are_left_to_volume_binding() -> None:
    plugin = plugin_with([storage_class("wffc"), claim("data")])
    assert plugin.pre_filter(CycleState(), pod_using("data"), table({ZONE: "a"})).is_skip


def test_a_pod_without_claims_skips() -> None:
    plugin = plugin_with([])
    pod = PodInfo.from_pod(pod_with("web", [{"name": "tmp", "emptyDir": {}}]))
    assert plugin.pre_filter(CycleState(), pod, table({ZONE: "a"})).is_skip


@pytest.mark.parametrize(
    ("objects", "claim_name", "message"),
    [
        ([], "data", 'persistentvolumeclaim "data" not found'),
        ([], "", "PersistentVolumeClaim had no name"),
        (
            [claim("data", storage_class_name=None)],
            "data",
            "PersistentVolumeClaim had no pv name and storageClass name",
        ),
        ([claim("data", storage_class_name="gone")], "data", 'storageclass.storage.k8s.io "gone" not found'),
        (
            [claim("data", storage_class_name="odd"), storage_class("odd", mode=None)],
            "data",
            'VolumeBindingMode not set for StorageClass "odd"',
        ),
        (
            [claim("data", storage_class_name="fast"), storage_class("fast", mode="Immediate")],
            "data",
            "PersistentVolume had no name",
        ),
        ([claim("data", volume_name="gone", bound=True)], "data", 'persistentvolume "gone" not found'),
    ],
)
def test_claims_and_volumes_that_cannot_be_read_fail_the_pod(
    objects: list[JSON], claim_name: str, message: str
) -> None:
    plugin = plugin_with(objects)
    status = plugin.pre_filter(CycleState(), pod_using(claim_name), table({ZONE: "a"}))
    assert (status.code, status.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)


def test_hints() -> None:
    plugin = plugin_with([])
    pod = pod_using("data")
    registered = {
        registration.event.resource: registration.hint for registration in plugin.events_to_register()
    }
    class_hint, claim_hint, volume_hint = (
        registered["StorageClass"],
        registered["PersistentVolumeClaim"],
        registered["PersistentVolume"],
    )
    assert class_hint is not None and claim_hint is not None and volume_hint is not None
    assert class_hint(pod, None, storage_class("wffc"))
    assert not class_hint(pod, None, storage_class("fast", mode="Immediate"))
    assert claim_hint(pod, None, claim("data"))
    assert not claim_hint(pod, None, claim("other"))
    assert volume_hint(pod, None, volume("pv"))
    assert volume_hint(pod, volume("pv", labels={ZONE: "a"}), volume("pv", labels={ZONE: "b"}))
    assert not volume_hint(pod, volume("pv", labels={ZONE: "a"}), volume("pv", labels={ZONE: "a", "x": "y"}))
