"""VolumeBinding, against upstream's behaviour and messages (kube-scheduler 1.34's volumebinding)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from pydantic import ValidationError
from tests.unit.framework.kubeobjects import make_node
from tests.unit.plugins.pluginruns import rejections, scores
from tests.unit.plugins.volumeobjects import (
    HOSTNAME,
    ZONE,
    FakeApi,
    capacity,
    claim,
    claim_ref,
    csi_driver,
    csi_node,
    ephemeral_volume,
    nodes,
    pod_with,
    pvc_volume,
    storage_class,
    volume,
)

from secondary_scheduler.framework import CycleState, Framework, Handle, NodeTable, PodInfo, ProfileSpec
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent
from secondary_scheduler.framework.informers import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from secondary_scheduler.framework.status import Code
from secondary_scheduler.framework.storage.csitranslation import MIGRATED_PLUGINS_ANNOTATION
from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.plugins.registry import in_tree_registry
from secondary_scheduler.plugins.volumebinding.args import VolumeBindingArgs
from secondary_scheduler.plugins.volumebinding.binder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
)
from secondary_scheduler.plugins.volumebinding.volume_binding import VolumeBinding, VolumeBindingFilterError
from secondary_scheduler.scheduler.schedule_one import schedule_pod

JSON = dict[str, Any]
WFFC = storage_class("wffc")
IMMEDIATE = storage_class("fast", mode="Immediate")
UNRESOLVABLE = " [unresolvable]"


def plugin_with(objects: list[JSON], args: JSON | None = None) -> tuple[VolumeBinding, Handle]:
    handle = Handle()
    plugin = VolumeBinding(VolumeBindingArgs.model_validate(args or {}), handle)
    handle.informers.fill(objects)
    return plugin, handle


def pod_using(*claims: str, name: str = "web", **fields: Any) -> PodInfo:
    return PodInfo.from_pod(pod_with(name, [pvc_volume(c) for c in claims], **fields))


def three_nodes() -> NodeTable:
    return NodeTable.from_objects(nodes(3, zones=("a", "b", "c")))


def pre_filter(plugin: VolumeBinding, pod: PodInfo, table: NodeTable) -> tuple[CycleState, Code, str]:
    state = CycleState()
    status = plugin.pre_filter(state, pod, table)
    return state, status.code, status.message


# -- PreFilter -----------------------------------------------------------------------------


def test_a_pod_without_claims_skips_the_plugin() -> None:
    plugin, _ = plugin_with([])
    pod = PodInfo.from_pod(pod_with("web", [{"name": "tmp", "emptyDir": {}}]))
    assert pre_filter(plugin, pod, three_nodes())[1] == Code.SKIP


@pytest.mark.parametrize(
    ("objects", "volumes", "message"),
    [
        ([], [pvc_volume("data")], 'persistentvolumeclaim "data" not found'),
        (
            [],
            [ephemeral_volume("scratch")],
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"',
        ),
        (
            [claim("web-scratch", owner_uid="someone-else")],
            [ephemeral_volume("scratch")],
            "PVC default/web-scratch was not created for pod default/web (pod is not owner)",
        ),
        (
            [claim("data", volume_name="gone", phase="Lost")],
            [pvc_volume("data")],
            'persistentvolumeclaim "data" bound to non-existent persistentvolume "gone"',
        ),
        (
            [claim("data", deleting=True)],
            [pvc_volume("data")],
            'persistentvolumeclaim "data" is being deleted',
        ),
    ],
)
def test_claims_that_cannot_be_used_fail_the_pod_everywhere(
    objects: list[JSON], volumes: list[JSON], message: str
) -> None:
    plugin, _ = plugin_with([WFFC, *objects])
    pod = PodInfo.from_pod(pod_with("web", volumes))
    _, code, text = pre_filter(plugin, pod, three_nodes())
    assert (code, text) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)


@pytest.mark.parametrize(
    "unbound",
    [
        claim("data", storage_class_name="fast"),  # Immediate class, not bound yet
        claim("data", storage_class_name="missing"),  # a class that does not exist binds immediately
        claim("data", storage_class_name=None),  # no class at all
        claim("data", volume_name="pv-1"),  # pre-bound by name, binding not complete
    ],
)
def test_unbound_immediate_claims_are_unresolvable(unbound: JSON) -> None:
    plugin, _ = plugin_with([WFFC, IMMEDIATE, unbound])
    _, code, text = pre_filter(plugin, pod_using("data"), three_nodes())
    assert (code, text) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pod has unbound immediate PersistentVolumeClaims",
    )


def test_a_class_without_binding_mode_is_an_error() -> None:
    plugin, _ = plugin_with([storage_class("odd", mode=None), claim("data", storage_class_name="odd")])
    _, code, text = pre_filter(plugin, pod_using("data"), three_nodes())
    assert (code, text) == (Code.ERROR, 'VolumeBindingMode not set for StorageClass "odd"')


def test_the_pods_own_ephemeral_claim_is_used() -> None:
    plugin, _ = plugin_with([WFFC, claim("web-scratch", owner_uid="uid-web")])
    pod = PodInfo.from_pod(pod_with("web", [ephemeral_volume("scratch")]))
    assert pre_filter(plugin, pod, three_nodes())[1] == Code.SUCCESS
    assert rejections(plugin, pod, three_nodes()) == {}


# -- Filter: bound claims ------------------------------------------------------------------


def test_a_bound_volumes_node_affinity_is_honoured() -> None:
    objects = [WFFC, claim("data", volume_name="pv-1", bound=True), volume("pv-1", hostnames=["node-1"])]
    plugin, _ = plugin_with(objects)
    assert rejections(plugin, pod_using("data"), three_nodes()) == {
        "node-0": [REASON_NODE_CONFLICT + UNRESOLVABLE],
        "node-2": [REASON_NODE_CONFLICT + UNRESOLVABLE],
    }


def test_a_bound_claim_whose_volume_is_gone_fits_nowhere() -> None:
    plugin, _ = plugin_with([WFFC, claim("data", volume_name="gone", bound=True)])
    rejected = rejections(plugin, pod_using("data"), three_nodes())
    assert rejected == {node: [REASON_PV_NOT_EXIST + UNRESOLVABLE] for node in ["node-0", "node-1", "node-2"]}


def test_a_node_stops_at_its_first_failing_bound_claim() -> None:
    """Where the first volume's affinity fails the second claim's missing volume is not reported."""
    objects = [
        WFFC,
        claim("a", volume_name="pv-a", bound=True),
        claim("b", volume_name="gone", bound=True),
        volume("pv-a", zones=["a"]),
    ]
    plugin, _ = plugin_with(objects)
    assert rejections(plugin, pod_using("a", "b"), three_nodes()) == {
        "node-0": [REASON_PV_NOT_EXIST + UNRESOLVABLE],
        "node-1": [REASON_NODE_CONFLICT + UNRESOLVABLE],
        "node-2": [REASON_NODE_CONFLICT + UNRESOLVABLE],
    }


def test_volume_affinity_on_the_node_name_field_matches_no_node() -> None:
    """CheckNodeAffinity matches a node with labels only: metadata.name In [...] never matches."""
    affinity = {
        "required": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-0"]}]},
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["c"]}]},
            ]
        }
    }
    objects = [WFFC, claim("data", volume_name="pv-1", bound=True), volume("pv-1", node_affinity=affinity)]
    plugin, _ = plugin_with(objects)
    assert sorted(rejections(plugin, pod_using("data"), three_nodes())) == ["node-0", "node-1"]


def test_an_in_tree_volume_is_read_with_the_csi_topology_where_the_node_migrated() -> None:
    """tryTranslatePVToCSI: on a migrated node the zone requirement uses the CSI driver's key."""
    ebs = volume(
        "pv-1",
        zones=["a"],
        source={"awsElasticBlockStore": {"volumeID": "vol-1"}},
    )
    labels = {HOSTNAME: "node-0", ZONE: "a", "topology.ebs.csi.aws.com/zone": "b"}
    table = NodeTable.from_objects([make_node("node-0", labels=labels), make_node("node-1", labels=labels)])
    migrated = csi_node("node-1", {}, {MIGRATED_PLUGINS_ANNOTATION: "kubernetes.io/aws-ebs"})
    objects = [WFFC, claim("data", volume_name="pv-1", bound=True), ebs, migrated]
    plugin, _ = plugin_with(objects)
    assert rejections(plugin, pod_using("data"), table) == {"node-1": [REASON_NODE_CONFLICT + UNRESOLVABLE]}


# -- Filter: claims waiting for the first consumer, static volumes ------------------------


def chosen_volume(plugin: VolumeBinding, pod: PodInfo, table: NodeTable, node: str) -> list[str]:
    """The volumes Reserve would pre-bind on ``node`` (after PreFilter and Filter)."""
    state = CycleState()
    assert plugin.pre_filter(state, pod, table).is_success
    plugin.filter(state, pod, table, table.active_slots())
    assert plugin.reserve(state, pod, node).is_success
    data = state.read("VolumeBinding", object)
    to_write = getattr(data, "to_write", None)
    assert to_write is not None
    return [v["metadata"]["name"] for v, _ in to_write.static_bindings]


def test_the_smallest_available_volume_that_fits_is_chosen() -> None:
    objects = [
        WFFC,
        claim("data", size="2Gi"),
        volume("too-small", size="1Gi"),
        volume("big", size="10Gi"),
        volume("just-right", size="3Gi"),
        volume("taken", size="2Gi", claim_ref=claim_ref("other")),
        volume("released", size="2Gi", phase="Released"),
        volume("other-class", size="2Gi", storage_class_name="slow"),
    ]
    plugin, _ = plugin_with(objects)
    assert chosen_volume(plugin, pod_using("data"), three_nodes(), "node-0") == ["just-right"]


def test_a_volume_pre_bound_to_the_claim_wins_even_if_larger() -> None:
    objects = [
        WFFC,
        claim("data"),
        volume("small", size="1Gi"),
        volume("mine", size="50Gi", claim_ref=claim_ref("data"), phase="Available"),
    ]
    plugin, _ = plugin_with(objects)
    assert chosen_volume(plugin, pod_using("data"), three_nodes(), "node-0") == ["mine"]


def test_a_pre_bound_volume_whose_affinity_excludes_the_node_leaves_the_claim_to_provisioning() -> None:
    """FindMatchingVolume returns no match (not a smaller volume) where the pre-bound one does not fit."""
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("data"),
        volume("small", size="1Gi"),
        volume("mine", size="5Gi", claim_ref=claim_ref("data", uid="uid-data"), hostnames=["node-1"]),
    ]
    plugin, _ = plugin_with(objects)
    assert rejections(plugin, pod_using("data"), three_nodes()) == {
        "node-0": [REASON_BIND_CONFLICT + UNRESOLVABLE],
        "node-2": [REASON_BIND_CONFLICT + UNRESOLVABLE],
    }


@pytest.mark.parametrize(
    ("claim_fields", "volume_fields"),
    [
        ({"modes": ["ReadWriteMany"]}, {"modes": ["ReadWriteOnce"]}),
        ({"selector": {"matchLabels": {"tier": "gold"}}}, {"labels": {"tier": "silver"}}),
        ({"size": "5Gi"}, {"size": "4Gi"}),
        ({}, {"hostnames": ["elsewhere"]}),
    ],
)
def test_volumes_that_do_not_match_the_claim_are_not_bound(claim_fields: JSON, volume_fields: JSON) -> None:
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("data", **claim_fields),
        volume("pv-1", **volume_fields),
    ]
    plugin, _ = plugin_with(objects)
    rejected = rejections(plugin, pod_using("data"), three_nodes())
    assert rejected == {
        node: [REASON_BIND_CONFLICT + UNRESOLVABLE] for node in ["node-0", "node-1", "node-2"]
    }


def test_the_selector_and_access_modes_that_match_are_accepted() -> None:
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("data", modes=["ReadWriteOnce"], selector={"matchLabels": {"tier": "gold"}}),
        volume("pv-1", modes=["ReadWriteOnce", "ReadOnlyMany"], labels={"tier": "gold"}),
    ]
    plugin, _ = plugin_with(objects)
    assert rejections(plugin, pod_using("data"), three_nodes()) == {}


def test_local_volumes_decide_where_the_pod_can_go() -> None:
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("data"),
        volume("local-2", hostnames=["node-2"]),
    ]
    plugin, _ = plugin_with(objects)
    pod = pod_using("data")
    assert sorted(rejections(plugin, pod, three_nodes())) == ["node-0", "node-1"]
    assert chosen_volume(plugin, pod, three_nodes(), "node-2") == ["local-2"]


def test_two_claims_never_get_the_same_volume() -> None:
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("a", size="1Gi"),
        claim("b", size="1Gi"),
        volume("pv-0", hostnames=["node-0"]),
        volume("pv-1a", hostnames=["node-1"]),
        volume("pv-1b", hostnames=["node-1"]),
    ]
    plugin, _ = plugin_with(objects)
    pod = pod_using("a", "b")
    assert sorted(rejections(plugin, pod, three_nodes())) == ["node-0", "node-2"]
    assert sorted(chosen_volume(plugin, pod, three_nodes(), "node-1")) == ["pv-1a", "pv-1b"]


def test_smaller_claims_are_matched_first() -> None:
    """byPVCSize: the 1Gi claim takes the 1Gi volume, leaving the 5Gi one for the 4Gi claim."""
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("big", size="4Gi"),
        claim("small", size="1Gi"),
        volume("pv-5", size="5Gi"),
        volume("pv-1", size="1Gi"),
    ]
    plugin, _ = plugin_with(objects)
    assert chosen_volume(plugin, pod_using("big", "small"), three_nodes(), "node-0") == ["pv-1", "pv-5"]


# -- Filter: dynamic provisioning ----------------------------------------------------------


def test_a_class_with_a_provisioner_provisions_anywhere() -> None:
    plugin, _ = plugin_with([WFFC, claim("data")])
    assert rejections(plugin, pod_using("data"), three_nodes()) == {}


def test_allowed_topologies_limit_where_a_volume_can_be_provisioned() -> None:
    topology = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a", "c"]}]}]
    plugin, _ = plugin_with([storage_class("wffc", allowed_topologies=topology), claim("data")])
    assert rejections(plugin, pod_using("data"), three_nodes()) == {
        "node-1": [REASON_BIND_CONFLICT + UNRESOLVABLE]
    }


def test_storage_capacity_is_checked_when_the_driver_asks_for_it() -> None:
    objects = [
        WFFC,
        csi_driver("csi.example.com"),
        claim("data", size="5Gi"),
        capacity("c0", "wffc", capacity_size="10Gi", hostname="node-0"),
        capacity("c1", "wffc", capacity_size="4Gi", hostname="node-1"),
        capacity("c1-max", "wffc", capacity_size="100Gi", maximum="1Gi", hostname="node-1"),
        capacity("c2-other", "other", capacity_size="100Gi", hostname="node-2"),
    ]
    plugin, _ = plugin_with(objects)
    rejected = rejections(plugin, pod_using("data"), three_nodes())
    assert rejected == {
        "node-1": [REASON_NOT_ENOUGH_SPACE + UNRESOLVABLE],
        "node-2": [REASON_NOT_ENOUGH_SPACE + UNRESOLVABLE],
    }


def test_capacity_with_a_label_selector_topology() -> None:
    zone_pool = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["b"]}]}
    objects = [
        WFFC,
        csi_driver("csi.example.com"),
        claim("data", size="5Gi"),
        capacity("zone-b", "wffc", capacity_size="10Gi", node_topology=zone_pool),
        capacity("nowhere", "wffc", capacity_size="10Gi"),  # no nodeTopology: reaches no node
    ]
    plugin, _ = plugin_with(objects)
    assert sorted(rejections(plugin, pod_using("data"), three_nodes())) == ["node-0", "node-2"]


@pytest.mark.parametrize("driver", [None, csi_driver("csi.example.com", storage_capacity=False)])
def test_capacity_is_not_checked_without_a_driver_that_tracks_it(driver: JSON | None) -> None:
    objects = [WFFC, claim("data", size="5Gi"), *([driver] if driver else [])]
    plugin, _ = plugin_with(objects)
    assert rejections(plugin, pod_using("data"), three_nodes()) == {}


def test_a_claim_without_a_size_needs_no_capacity() -> None:
    objects = [WFFC, csi_driver("csi.example.com"), claim("data", size=None)]
    plugin, _ = plugin_with(objects)
    assert rejections(plugin, pod_using("data"), three_nodes()) == {}


def test_a_claim_already_meant_for_a_node_rules_out_the_others() -> None:
    plugin, _ = plugin_with([WFFC, claim("data", selected_node="node-2")])
    rejected = rejections(plugin, pod_using("data"), three_nodes())
    assert rejected == {node: [REASON_BIND_CONFLICT + UNRESOLVABLE] for node in ["node-0", "node-1"]}


def test_reasons_accumulate_in_upstreams_order() -> None:
    """A bound volume elsewhere and no room for the new one: both reasons, node conflict first."""
    objects = [
        WFFC,
        csi_driver("csi.example.com"),
        claim("old", volume_name="pv-old", bound=True),
        volume("pv-old", hostnames=["node-0"]),
        claim("new", size="5Gi"),
        capacity("c0", "wffc", capacity_size="10Gi", hostname="node-0"),
    ]
    plugin, _ = plugin_with(objects)
    rejected = rejections(plugin, pod_using("old", "new"), three_nodes())
    both = [REASON_NODE_CONFLICT + UNRESOLVABLE, REASON_NOT_ENOUGH_SPACE + UNRESOLVABLE]
    assert rejected == {"node-1": both, "node-2": both}


def test_a_vanished_class_is_a_filter_error() -> None:
    handle = Handle()
    plugin = VolumeBinding(VolumeBindingArgs.model_validate({}), handle)
    handle.informers.fill([WFFC, claim("data")])
    state = CycleState()
    table = three_nodes()
    pod = pod_using("data")
    assert plugin.pre_filter(state, pod, table).is_success
    handle.informers.fill([claim("data")])  # the class is deleted between PreFilter and Filter
    with pytest.raises(VolumeBindingFilterError, match='failed to find storage class "wffc"'):
        plugin.filter(state, pod, table, table.active_slots())


def test_the_framework_reports_prefilter_and_filter_rejections_as_kube_scheduler() -> None:
    handle = Handle()
    profile = ProfileSpec(
        scheduler_name="s",
        plugins={"preFilter": [("VolumeBinding", 0)], "filter": [("VolumeBinding", 0)]},
    )
    framework = Framework(profile, in_tree_registry(), handle)
    handle.informers.fill([WFFC, claim("data", selected_node="node-1")])
    table = three_nodes()
    missing = schedule_pod(framework, pod_using("nope"), table)
    assert missing.message == '0/3 nodes are available: persistentvolumeclaim "nope" not found.'
    elsewhere = schedule_pod(framework, pod_using("data"), table)
    assert elsewhere.node_name == "node-1"


# -- Score -----------------------------------------------------------------------------------


def test_scoring_is_off_as_in_kube_scheduler_1_34() -> None:
    plugin, _ = plugin_with([WFFC, claim("data")])
    assert scores(plugin, pod_using("data"), three_nodes()) == {}


# -- Reserve / Unreserve ---------------------------------------------------------------------


def reserved(plugin: VolumeBinding, pod: PodInfo, table: NodeTable, node: str) -> CycleState:
    state = CycleState()
    assert plugin.pre_filter(state, pod, table).is_success
    plugin.filter(state, pod, table, table.active_slots())
    assert plugin.reserve(state, pod, node).is_success
    return state


def test_reserve_assumes_bindings_so_the_next_pod_cannot_take_them() -> None:
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("a"),
        claim("b"),
        volume("pv-1"),
    ]
    plugin, handle = plugin_with(objects)
    table = three_nodes()
    state = reserved(plugin, pod_using("a", name="first"), table, "node-0")
    assumed = handle.informer(PERSISTENT_VOLUMES).get("pv-1")
    assert assumed is not None
    assert assumed["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "a",
        "uid": "uid-a",
        "resourceVersion": "10",
    }
    assert assumed["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    # The next pod, wanting another claim of the class, finds no volume left.
    second = rejections(plugin, pod_using("b", name="second"), table)
    assert second == {node: [REASON_BIND_CONFLICT + UNRESOLVABLE] for node in ["node-0", "node-1", "node-2"]}
    plugin.unreserve(state, pod_using("a", name="first"), "node-0")
    assert handle.informer(PERSISTENT_VOLUMES).get("pv-1") == objects[-1]
    assert rejections(plugin, pod_using("b", name="second"), table) == {}


def test_reserve_annotates_claims_to_provision_with_the_node() -> None:
    plugin, handle = plugin_with([WFFC, claim("data")])
    table = three_nodes()
    pod = pod_using("data")
    state = reserved(plugin, pod, table, "node-2")
    claims = handle.informer(PERSISTENT_VOLUME_CLAIMS)
    annotated = claims.get("data", "default")
    assert annotated is not None
    assert annotated["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-2"
    # Another pod sharing the claim now has to follow it to node-2.
    other = rejections(plugin, pod_using("data", name="sharer"), table)
    assert sorted(other) == ["node-0", "node-1"]
    plugin.unreserve(state, pod, "node-2")
    restored = claims.get("data", "default")
    assert restored is not None
    assert "volume.kubernetes.io/selected-node" not in restored["metadata"]["annotations"]


def test_reserve_of_a_pod_whose_claims_are_bound_has_nothing_to_bind() -> None:
    objects = [
        WFFC,
        claim("data", volume_name="pv-1", bound=True),
        volume("pv-1", claim_ref=claim_ref("data")),
    ]
    plugin, _ = plugin_with(objects)
    table = three_nodes()
    pod = pod_using("data")
    state = reserved(plugin, pod, table, "node-0")
    assert asyncio.run(plugin.pre_bind(state, pod, "node-0")).is_success


def test_reserve_and_prebind_of_a_pod_without_claims_succeed() -> None:
    plugin, _ = plugin_with([])
    pod = PodInfo.from_pod(pod_with("web", []))
    state = CycleState()
    assert plugin.pre_filter(state, pod, three_nodes()).is_skip
    assert plugin.reserve(state, pod, "node-0").is_success
    assert asyncio.run(plugin.pre_bind(state, pod, "node-0")).is_success


# -- PreBind -------------------------------------------------------------------------------


class Binding:
    """A scheduled pod with its volumes reserved on ``node``, a fake API and fast polling."""

    def __init__(self, objects: list[JSON], node: str = "node-1", timeout: int = 5) -> None:
        self.api = FakeApi()
        self.handle = Handle(client=cast(ApiClient, self.api))
        self.plugin = VolumeBinding(
            VolumeBindingArgs.model_validate({"bindTimeoutSeconds": timeout}), self.handle
        )
        self.plugin.binder.poll_interval = 0.01
        self.handle.informers.fill(objects)
        self.table = three_nodes()
        self.pod = pod_using("data")
        self.node = node
        self.state = reserved(self.plugin, self.pod, self.table, node)
        self.table.add_pod(self.pod, node)  # the runtime assumed the pod on the node

    async def pre_bind(self) -> tuple[Code, str]:
        status = await self.plugin.pre_bind(self.state, self.pod, self.node)
        return status.code, status.message

    def watch(self, kind: str, obj: JSON) -> None:
        """What the watch brings: the API server's version of an object."""
        resource = PERSISTENT_VOLUME_CLAIMS if kind == "claim" else PERSISTENT_VOLUMES
        self.handle.informer(resource).event("MODIFIED", obj)


async def test_prebind_writes_the_annotation_and_waits_until_the_claim_is_bound() -> None:
    binding = Binding([WFFC, claim("data")])
    task = asyncio.create_task(binding.pre_bind())
    await asyncio.sleep(0.05)
    assert not task.done()  # written, now waiting for the provisioner and the PV controller
    [(path, body)] = binding.api.replaced
    assert path == "/api/v1/namespaces/default/persistentvolumeclaims/data"
    assert body["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-1"
    provisioned = volume("pvc-data", hostnames=["node-1"], claim_ref=claim_ref("data", uid="uid-data"))
    binding.watch("volume", provisioned)
    bound = claim("data", volume_name="pvc-data", bound=True, selected_node="node-1", resource_version="200")
    binding.watch("claim", bound)
    assert await asyncio.wait_for(task, 2) == (Code.SUCCESS, "")


async def test_prebind_prebinds_a_static_volume_and_waits_for_the_pv_controller() -> None:
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("data"),
        volume("pv-1"),
    ]
    binding = Binding(objects)
    task = asyncio.create_task(binding.pre_bind())
    await asyncio.sleep(0.05)
    [(path, body)] = binding.api.replaced
    assert path == "/api/v1/persistentvolumes/pv-1"
    assert body["spec"]["claimRef"]["name"] == "data"
    assert body["kind"] == "PersistentVolume"
    done = volume("pv-1", claim_ref=claim_ref("data", uid="uid-data"), phase="Bound", resource_version="500")
    binding.watch("volume", done)
    binding.watch("claim", claim("data", volume_name="pv-1", bound=True, resource_version="501"))
    assert await asyncio.wait_for(task, 2) == (Code.SUCCESS, "")


async def test_a_provisioner_that_gives_up_sends_the_pod_back() -> None:
    """The provisioner removes the selected-node annotation when the node cannot hold the volume."""
    binding = Binding([WFFC, claim("data")])
    task = asyncio.create_task(binding.pre_bind())
    await asyncio.sleep(0.05)
    binding.watch("claim", claim("data", resource_version="300"))
    assert await asyncio.wait_for(task, 2) == (
        Code.ERROR,
        'binding volumes: provisioning failed for PVC "data"',
    )


async def test_a_claim_ref_reset_by_the_pv_controller_is_an_error() -> None:
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("data"),
        volume("pv-1"),
    ]
    binding = Binding(objects)
    task = asyncio.create_task(binding.pre_bind())
    await asyncio.sleep(0.05)
    binding.watch("volume", volume("pv-1", resource_version="900"))
    assert await asyncio.wait_for(task, 2) == (
        Code.ERROR,
        'binding volumes: ClaimRef got reset for pv "pv-1"',
    )


async def test_binding_gives_up_after_bind_timeout_seconds() -> None:
    binding = Binding([WFFC, claim("data")], timeout=0)
    assert await binding.pre_bind() == (Code.ERROR, "binding volumes: context deadline exceeded")


async def test_a_deleted_pod_stops_the_wait() -> None:
    binding = Binding([WFFC, claim("data")])
    task = asyncio.create_task(binding.pre_bind())
    await asyncio.sleep(0.05)
    binding.table.remove_pod(binding.pod.key)
    assert await asyncio.wait_for(task, 2) == (
        Code.ERROR,
        'binding volumes: pod does not exist any more: pod "web" not found',
    )


async def test_an_api_refusal_is_the_error_and_the_assumption_is_taken_back() -> None:
    binding = Binding([WFFC, claim("data")])
    message = (
        'Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    binding.api.fail_with = ApiError(409, "Conflict", message)
    assert await binding.pre_bind() == (Code.ERROR, message)
    restored = binding.handle.informer(PERSISTENT_VOLUME_CLAIMS).get("data", "default")
    assert restored is not None
    assert "volume.kubernetes.io/selected-node" not in restored["metadata"]["annotations"]


async def test_prebind_without_an_api_client_is_an_error() -> None:
    plugin, _ = plugin_with([WFFC, claim("data")])
    table = three_nodes()
    pod = pod_using("data")
    state = reserved(plugin, pod, table, "node-0")
    status = await plugin.pre_bind(state, pod, "node-0")
    assert status.code == Code.ERROR


# -- args ------------------------------------------------------------------------------------


def test_args_defaults_and_validation() -> None:
    assert VolumeBindingArgs.model_validate({}).bind_timeout_seconds == 600
    assert VolumeBindingArgs.model_validate({"bindTimeoutSeconds": 30}).bind_timeout_seconds == 30
    with pytest.raises(ValidationError):
        VolumeBindingArgs.model_validate({"bindTimeoutSeconds": -1})
    with pytest.raises(ValidationError, match="turn on the feature gate StorageCapacityScoring"):
        VolumeBindingArgs.model_validate({"shape": [{"utilization": 0, "score": 10}]})


# -- queueing hints --------------------------------------------------------------------------


def hint(plugin: VolumeBinding, kind: str, pod: PodInfo, old: Any, new: Any) -> bool | None:
    """The registered hint's answer (True when registered without one), None when not registered."""
    for registration in plugin.events_to_register():
        if registration.event.resource == kind:
            return True if registration.hint is None else registration.hint(pod, old, new)
    return None


def test_queueing_hints() -> None:
    plugin, _ = plugin_with([])
    pod = pod_using("data")
    assert hint(plugin, "PersistentVolumeClaim", pod, None, claim("data"))
    assert not hint(plugin, "PersistentVolumeClaim", pod, None, claim("other"))
    assert not hint(plugin, "PersistentVolumeClaim", pod, None, claim("data", namespace="elsewhere"))
    assert hint(plugin, "StorageClass", pod, None, WFFC)
    topology = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]
    assert hint(plugin, "StorageClass", pod, WFFC, storage_class("wffc", allowed_topologies=topology))
    assert not hint(plugin, "StorageClass", pod, WFFC, {**WFFC, "parameters": {"x": "y"}})
    small = capacity("c", "wffc", capacity_size="1Gi")
    assert hint(plugin, "CSIStorageCapacity", pod, small, capacity("c", "wffc", capacity_size="2Gi"))
    assert not hint(plugin, "CSIStorageCapacity", pod, small, capacity("c", "wffc", capacity_size="1Gi"))
    annotated = csi_node("n", {}, {MIGRATED_PLUGINS_ANNOTATION: "kubernetes.io/gce-pd"})
    assert hint(plugin, "CSINode", pod, csi_node("n", {}), annotated)
    assert not hint(plugin, "CSINode", pod, csi_node("n", {}), csi_node("n", {"d": 3}))
    registered = {registration.event for registration in plugin.events_to_register()}
    assert ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL) in registered


def test_volumes_follow_the_watch() -> None:
    """The class index follows the informer: a volume bound elsewhere, or deleted, is no longer offered."""
    objects = [
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        claim("data"),
        volume("pv-1"),
    ]
    plugin, handle = plugin_with(objects)
    volumes = handle.informer(PERSISTENT_VOLUMES)
    table = three_nodes()
    assert rejections(plugin, pod_using("data"), table) == {}
    volumes.event("MODIFIED", volume("pv-1", claim_ref=claim_ref("other"), resource_version="30"))
    assert sorted(rejections(plugin, pod_using("data"), table)) == ["node-0", "node-1", "node-2"]
    volumes.event("MODIFIED", volume("pv-1", claim_ref=claim_ref("data"), resource_version="31"))
    assert chosen_volume(plugin, pod_using("data"), table, "node-0") == ["pv-1"]
    volumes.event("DELETED", volume("pv-1"))
    volumes.event("ADDED", volume("pv-2", storage_class_name="other"))
    assert sorted(rejections(plugin, pod_using("data"), table)) == ["node-0", "node-1", "node-2"]
    volumes.event("MODIFIED", volume("pv-2", resource_version="40"))  # moved to the claim's class
    assert chosen_volume(plugin, pod_using("data"), table, "node-0") == ["pv-2"]
