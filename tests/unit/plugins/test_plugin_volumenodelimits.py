"""NodeVolumeLimits against upstream's behaviour and messages (kube-scheduler 1.34's csi.go)."""

from __future__ import annotations

from typing import Any

from tests.unit.plugins.pluginruns import rejections
from tests.unit.plugins.volumeobjects import (
    ZONE,
    claim,
    csi_node,
    nodes,
    pod_with,
    pvc_volume,
    storage_class,
    volume,
    volume_attachment,
)

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from secondary_scheduler.plugins.nodevolumelimits.csi import REASON_MAX_VOLUME_COUNT_EXCEEDED
from secondary_scheduler.plugins.nodevolumelimits.csitranslation import (
    MIGRATED_PLUGINS_ANNOTATION,
    translate_pv_topology,
)

JSON = dict[str, Any]
DRIVER = "local.secsched.io"
EXCEEDED = [REASON_MAX_VOLUME_COUNT_EXCEEDED]


def plugin_with(objects: list[JSON]) -> NodeVolumeLimits:
    handle = Handle()
    plugin = NodeVolumeLimits(None, handle)
    handle.informers.fill(objects)
    return plugin


def bound(name: str, handle: str | None = None, driver: str = DRIVER) -> list[JSON]:
    """A claim bound to a CSI volume of ``driver``."""
    return [
        claim(name, volume_name=f"pv-{name}", bound=True),
        volume(f"pv-{name}", csi=(driver, handle or f"h-{name}"), claim_ref={"name": name}),
    ]


def on_node(name: str, node: str, *claims: str) -> JSON:
    return pod_with(name, [pvc_volume(c) for c in claims], node_name=node)


def pod_using(*claims: str) -> PodInfo:
    return PodInfo.from_pod(pod_with("web", [pvc_volume(c) for c in claims]))


def test_a_node_at_its_limit_takes_no_more_volumes_of_the_driver() -> None:
    objects = [
        csi_node("node-0", {DRIVER: 2}),
        csi_node("node-1", {DRIVER: 3}),
        *bound("a"),
        *bound("b"),
        *bound("c"),
        *bound("d"),
    ]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(3), [on_node("x", "node-0", "a", "b"), on_node("y", "node-1", "c")])
    assert rejections(plugin, pod_using("d"), table) == {"node-0": EXCEEDED}


def test_a_volume_already_on_the_node_is_not_counted_twice() -> None:
    objects = [csi_node("node-0", {DRIVER: 2}), *bound("a"), *bound("b")]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(1), [on_node("x", "node-0", "a", "b")])
    assert rejections(plugin, pod_using("a"), table) == {}
    # Two claims bound to volumes with the same handle are one volume.
    objects = [csi_node("node-0", {DRIVER: 1}), *bound("a", handle="same"), *bound("b", handle="same")]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(1), [on_node("x", "node-0", "a")])
    assert rejections(plugin, pod_using("b"), table) == {}


def test_an_unbound_claim_counts_as_a_volume_of_its_class_provisioner() -> None:
    objects = [
        csi_node("node-0", {DRIVER: 1}),
        csi_node("node-1", {"other.csi": 1}),
        storage_class("local", provisioner=DRIVER),
        claim("new", storage_class_name="local"),
        *bound("a"),
    ]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(2), [on_node("x", "node-0", "a"), on_node("y", "node-1", "a")])
    assert rejections(plugin, pod_using("new"), table) == {"node-0": EXCEEDED}


def test_nodes_without_a_csi_node_or_a_count_have_no_limit() -> None:
    objects = [csi_node("node-1", {DRIVER: None}), *bound("a"), *bound("b")]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(2), [on_node("x", "node-0", "a"), on_node("y", "node-1", "a")])
    assert rejections(plugin, pod_using("b"), table) == {}


def test_assumed_pods_count() -> None:
    """A pod the scheduler placed moments ago is on the node in the table: its volumes count."""
    plugin = plugin_with([csi_node("node-0", {DRIVER: 1}), *bound("a"), *bound("b")])
    table = NodeTable.from_objects(nodes(1))
    assert rejections(plugin, pod_using("b"), table) == {}
    table.add_pod(PodInfo.from_pod(pod_with("assumed", [pvc_volume("a")])), "node-0")
    assert rejections(plugin, pod_using("b"), table) == {"node-0": EXCEEDED}


def test_volume_attachments_to_the_node_count() -> None:
    objects = [
        csi_node("node-0", {DRIVER: 1}),
        *bound("a"),
        *bound("b"),
        volume_attachment("va-1", "node-0", DRIVER, "pv-a"),
    ]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(2))
    assert rejections(plugin, pod_using("b"), table) == {"node-0": EXCEEDED}


def test_in_tree_volumes_count_against_their_csi_driver() -> None:
    ebs_pv = volume("pv-ebs", source={"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}})
    objects = [
        csi_node("node-0", {"ebs.csi.aws.com": 1}),
        claim("ebs", volume_name="pv-ebs", bound=True),
        ebs_pv,
        claim("new", storage_class_name="gp2"),
        storage_class("gp2", provisioner="kubernetes.io/aws-ebs"),
    ]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(1), [on_node("x", "node-0", "ebs")])
    assert rejections(plugin, pod_using("new"), table) == {"node-0": EXCEEDED}
    # The same disk inline ("vol-1" is what aws://.../vol-1 translates to) is the same volume.
    inline = PodInfo.from_pod(pod_with("web", [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}]))
    assert rejections(plugin, inline, table) == {}
    other = PodInfo.from_pod(pod_with("web", [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-2"}}]))
    assert rejections(plugin, other, table) == {"node-0": EXCEEDED}


def test_portworx_counts_only_where_the_node_says_it_migrated() -> None:
    px = {"portworxVolume": {"volumeID": "px-1"}}
    annotated = csi_node(
        "node-1", {"pxd.portworx.com": 0}, {MIGRATED_PLUGINS_ANNOTATION: "kubernetes.io/portworx-volume"}
    )
    plugin = plugin_with([csi_node("node-0", {"pxd.portworx.com": 0}), annotated])
    pod = PodInfo.from_pod(pod_with("web", [{"name": "d", **px}]))
    assert rejections(plugin, pod, NodeTable.from_objects(nodes(2))) == {"node-1": EXCEEDED}


def test_a_missing_claim_fails_the_pod_everywhere() -> None:
    plugin = plugin_with([csi_node("node-0", {DRIVER: 5})])
    rejected = rejections(plugin, pod_using("nope"), NodeTable.from_objects(nodes(2)))
    message = 'looking up PVC default/nope: persistentvolumeclaim "nope" not found [unresolvable]'
    assert rejected == {"node-0": [message], "node-1": [message]}


def test_an_existing_pods_missing_claim_is_not_counted() -> None:
    plugin = plugin_with([csi_node("node-0", {DRIVER: 1}), *bound("b")])
    table = NodeTable.from_objects(nodes(1), [on_node("x", "node-0", "gone")])
    assert rejections(plugin, pod_using("b"), table) == {}


def test_pods_without_claims_or_migratable_volumes_skip() -> None:
    plugin = plugin_with([])
    pod = PodInfo.from_pod(pod_with("web", [{"name": "tmp", "emptyDir": {}}]))
    assert plugin.pre_filter(CycleState(), pod, NodeTable.from_objects(nodes(1))).is_skip


def test_limit_hint_and_csi_translation_of_topology() -> None:
    plugin = plugin_with([])
    hints = [
        r.hint for r in plugin.events_to_register() if r.event.resource == "CSINode" and r.hint is not None
    ]
    [grew] = hints
    pod = pod_using("a")
    assert grew(pod, csi_node("n", {DRIVER: 1}), csi_node("n", {DRIVER: 2}))
    assert grew(pod, csi_node("n", {}), csi_node("n", {DRIVER: 1}))
    assert not grew(pod, csi_node("n", {DRIVER: 2}), csi_node("n", {DRIVER: 1}))
    # A GCE PD zone label becomes a node affinity on the CSI driver's key.
    gce = volume("pd", labels={ZONE: "us-central1-a"}, source={"gcePersistentDisk": {"pdName": "d"}})
    translated = translate_pv_topology(gce)
    [term] = translated["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "topology.gke.io/zone", "operator": "In", "values": ["us-central1-a"]}
    ]
