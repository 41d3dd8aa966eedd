"""NodeVolumeLimits against upstream's behaviour and messages (kube-scheduler 1.34's csi.go)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from tests.unit.plugins.pluginruns import rejections
from tests.unit.plugins.volumeobjects import (
    ZONE,
    claim,
    csi_node,
    ephemeral_volume,
    nodes,
    pod_with,
    pvc_volume,
    storage_class,
    volume,
    volume_attachment,
)

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.storage import csitranslation
from secondary_scheduler.framework.storage import volumes as helpers
from secondary_scheduler.framework.storage.csitranslation import (
    MIGRATED_PLUGINS_ANNOTATION,
    translate_pv_topology,
)
from secondary_scheduler.plugins.nodevolumelimits import NodeVolumeLimits, csi
from secondary_scheduler.plugins.nodevolumelimits.csi import (
    INDEX_NAME,
    REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimitsError,
    VolumeBounds,
    pod_volume_bound,
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


# -- the fast path against a plain transcription of upstream's Filter -------------------------

EBS = "ebs.csi.aws.com"
PX = "pxd.portworx.com"
PX_PLUGIN = "kubernetes.io/portworx-volume"


class ReferenceFailure(Exception):
    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def reference_migration_on(csi: JSON | None, plugin: str) -> bool:
    """isCSIMigrationOn as utils.go writes it."""
    if csi is None or not plugin:
        return False
    if plugin in ("kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk"):
        return True
    if plugin == "kubernetes.io/cinder":
        return True
    if plugin != PX_PLUGIN:
        return False
    annotations = (csi.get("metadata") or {}).get("annotations")
    if annotations is None:
        return False
    value = annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin in (set(value.split(",")) if value else set())


def reference_driver_info(plugin: NodeVolumeLimits, csi: JSON | None, pvc: JSON) -> tuple[str, str]:
    """getCSIDriverInfo and getCSIDriverInfoFromSC."""
    pv_name = pvc["spec"].get("volumeName") or ""
    pv = plugin.volumes.get(pv_name) if pv_name else None
    if pv is not None:
        source = pv["spec"].get("csi")
        if source is not None:
            return source.get("driver") or "", source.get("volumeHandle") or ""
        in_tree = csitranslation.plugin_of_pv(pv)
        if in_tree is None or not reference_migration_on(csi, in_tree.name):
            return "", ""
        try:
            return in_tree.driver, csitranslation.pv_volume_handle(in_tree, pv)
        except csitranslation.TranslationError:
            return "", ""
    class_name = helpers.claim_class(pvc)
    if not class_name:
        return "", ""
    storage = plugin.classes.get(class_name)
    if storage is None:
        return "", ""
    handle = f"{plugin.random_prefix}-{pvc['metadata']['namespace']}/{pvc['metadata']['name']}"
    provisioner = storage.get("provisioner") or ""
    if provisioner in csitranslation.BY_NAME:
        if not reference_migration_on(csi, provisioner):
            return "", ""
        return csitranslation.BY_NAME[provisioner].driver, handle
    return provisioner, handle


def reference_attachable(
    plugin: NodeVolumeLimits, pod: JSON, csi: JSON | None, new_pod: bool, result: dict[str, str]
) -> None:
    """filterAttachableVolumes and checkAttachableInlineVolume."""
    namespace = pod["metadata"]["namespace"]
    for vol in pod["spec"].get("volumes") or ():
        if vol.get("persistentVolumeClaim") is not None:
            pvc_name, ephemeral = vol["persistentVolumeClaim"].get("claimName") or "", False
        elif vol.get("ephemeral") is not None:
            pvc_name, ephemeral = f"{pod['metadata']['name']}-{vol['name']}", True
        else:
            in_tree = csitranslation.plugin_of_inline(vol)
            if in_tree is None or not reference_migration_on(csi, in_tree.name):
                continue
            try:
                handle = csitranslation.inline_volume_handle(in_tree, vol)
            except csitranslation.TranslationError as error:
                raise ReferenceFailure(
                    f"converting volume({vol['name']}) from inline to csi: {error}"
                ) from None
            result[f"{in_tree.driver}/{handle}"] = in_tree.driver
            continue
        if not pvc_name:
            raise ReferenceFailure("PersistentVolumeClaim had no name")
        pvc = plugin.claims.get(pvc_name, namespace)
        if pvc is None:
            if new_pod:
                message = (
                    f'looking up PVC {namespace}/{pvc_name}: persistentvolumeclaim "{pvc_name}" not found'
                )
                raise ReferenceFailure(message, not_found=True)
            continue
        if ephemeral:
            problem = helpers.volume_is_for_pod(pod, pvc)
            if problem is not None:
                raise ReferenceFailure(problem)
        driver, handle = reference_driver_info(plugin, csi, pvc)
        if driver and handle:
            result[f"{driver}/{handle}"] = driver


def reference_filter(plugin: NodeVolumeLimits, pod: PodInfo, table: NodeTable, slot: int) -> tuple[str, str]:
    """Upstream's Filter on one node: ("pass" | "reject" | "unresolvable" | "error", message)."""
    node_name = table.names[slot]
    csi = plugin.csi_nodes.get(node_name)
    new: dict[str, str] = {}
    try:
        reference_attachable(plugin, dict(pod.obj), dict(csi) if csi else None, True, new)
    except ReferenceFailure as error:
        return ("unresolvable" if error.not_found else "error", str(error))
    if not new:
        return ("pass", "")
    limits = {}
    for driver in ((csi or {}).get("spec") or {}).get("drivers") or ():
        if (driver.get("allocatable") or {}).get("count") is not None:
            limits[driver["name"]] = int(driver["allocatable"]["count"])
    if not limits:
        return ("pass", "")
    attached: dict[str, str] = {}
    for existing in table.pods[slot].values():
        try:
            reference_attachable(plugin, dict(existing.obj), dict(csi) if csi else None, False, attached)
        except ReferenceFailure as error:
            return ("error", str(error))
    counts: dict[str, int] = {}
    for unique, driver in attached.items():
        new.pop(unique, None)
        counts[driver] = counts.get(driver, 0) + 1
    attachments: dict[str, str] = {}
    for va in plugin.attachments.list():
        spec = va["spec"]
        if spec.get("nodeName") != node_name or not spec.get("attacher"):
            continue
        pv_name = (spec.get("source") or {}).get("persistentVolumeName")
        pv = plugin.volumes.get(pv_name) if pv_name is not None else None
        if pv is None or pv["spec"].get("csi") is None:
            continue
        attachments[f"{spec['attacher']}/{pv['spec']['csi']['volumeHandle']}"] = spec["attacher"]
    for unique, driver in attachments.items():
        if unique not in attached:
            counts[driver] = counts.get(driver, 0) + 1
    adding: dict[str, int] = {}
    for driver in new.values():
        adding[driver] = adding.get(driver, 0) + 1
    for driver, count in adding.items():
        if driver in limits and counts.get(driver, 0) + count > limits[driver]:
            return ("reject", REASON_MAX_VOLUME_COUNT_EXCEEDED)
    return ("pass", "")


def outcomes(plugin: NodeVolumeLimits, pod: PodInfo, table: NodeTable, candidates: Any) -> object:
    """Per candidate position, its rejection; or the cycle's error message."""
    state = CycleState()
    if plugin.pre_filter(state, pod, table).is_skip:
        return {}
    try:
        answer = plugin.filter(state, pod, table, candidates)
    except NodeVolumeLimitsError as error:
        return str(error)
    result: dict[int, list[tuple[str, bool]]] = {}
    for mask, reason, unresolvable in answer:
        assert len(mask) == len(candidates)
        for position in np.flatnonzero(mask).tolist():
            result.setdefault(position, []).append((reason, unresolvable))
    return result


def expected_outcomes(plugin: NodeVolumeLimits, pod: PodInfo, table: NodeTable, candidates: Any) -> object:
    """The same from the reference: an Error on any candidate fails the cycle (the first one's)."""
    if not plugin.pre_filter(CycleState(), pod, table).is_success:
        return {}
    per_node = [reference_filter(plugin, pod, table, int(slot)) for slot in candidates]
    errors = [message for kind, message in per_node if kind == "error"]
    if errors:
        return f'running "NodeVolumeLimits" filter plugin: {errors[0]}'
    return {
        position: [(message, kind == "unresolvable")]
        for position, (kind, message) in enumerate(per_node)
        if kind in ("reject", "unresolvable")
    }


class World:
    """A random cluster of CSINodes, classes, volumes, claims, attachments and pods on nodes."""

    def __init__(self, rng: random.Random, rare: float) -> None:
        self.rng = rng
        self.rare = rare
        """How often something that makes upstream err is drawn."""
        self.node_count = rng.randint(1, 24)
        self.handle = Handle()
        self.plugin = NodeVolumeLimits(None, self.handle)
        self.volumes = [self.random_volume(f"pv-{index}") for index in range(rng.randint(0, 14))]
        self.claims = [self.random_claim(f"c-{index}") for index in range(rng.randint(1, 14))]
        self.pod_number = 0
        objects: list[JSON] = [
            storage_class("sc-a", provisioner="a.csi"),
            storage_class("sc-b", provisioner="b.csi"),
            storage_class("sc-ebs", provisioner="kubernetes.io/aws-ebs"),
            storage_class("sc-px", provisioner=PX_PLUGIN),
            storage_class("sc-file", provisioner="kubernetes.io/azure-file"),
            *self.volumes,
            *self.claims,
        ]
        objects += [self.random_csi_node(f"node-{i}") for i in range(self.node_count) if rng.random() < 0.85]
        objects += [self.random_attachment(f"va-{index}") for index in range(rng.randint(0, 6))]
        pods = [self.random_pod(node_name=f"node-{rng.randrange(self.node_count)}") for _ in range(30)]
        objects += self.ephemeral_claims(pods)
        self.handle.informers.fill(objects)
        self.table = NodeTable.from_objects(nodes(self.node_count), pods[: rng.randint(0, 30)])

    def random_csi_node(self, name: str) -> JSON:
        rng = self.rng
        limits = {
            driver: rng.choice([None, 0, 1, 2, 3, 4, 6])
            for driver in ("a.csi", "b.csi", EBS, PX)
            if rng.random() < 0.5
        }
        annotations = rng.choice(
            [
                None,
                {},
                {MIGRATED_PLUGINS_ANNOTATION: PX_PLUGIN},
                {MIGRATED_PLUGINS_ANNOTATION: f"x,{PX_PLUGIN}"},
            ]
        )
        node = csi_node(name, limits, annotations)
        if annotations is None:
            del node["metadata"]["annotations"]
        return node

    def random_volume(self, name: str) -> JSON:
        rng = self.rng
        kind = rng.choice(["csi", "csi", "csi", "ebs", "px", "gce", "nfs"])
        handle = f"h{rng.randrange(6)}"
        if kind == "csi":
            return volume(name, csi=(rng.choice(["a.csi", "b.csi", EBS]), handle))
        if kind == "ebs":
            volume_id = rng.choice([f"vol-{handle}", f"aws://zone-a/vol-{handle}", "aws://zone-a/bad"])
            return volume(name, source={"awsElasticBlockStore": {"volumeID": volume_id}})
        if kind == "px":
            return volume(name, source={"portworxVolume": {"volumeID": handle}})
        if kind == "gce":
            return volume(name, labels={ZONE: "eu-west1-b"}, source={"gcePersistentDisk": {"pdName": handle}})
        return volume(name, source={"nfs": {"server": "s", "path": "/"}})

    def random_claim(self, name: str) -> JSON:
        rng = self.rng
        volume_name = None
        if rng.random() < 0.6:
            volume_name = rng.choice([*(v["metadata"]["name"] for v in self.volumes), "pv-gone"])
        class_name = rng.choice(["sc-a", "sc-b", "sc-ebs", "sc-px", "sc-file", "sc-gone", None, ""])
        return claim(
            name, volume_name=volume_name, storage_class_name=class_name, bound=volume_name is not None
        )

    def random_attachment(self, name: str) -> JSON:
        rng = self.rng
        node = f"node-{rng.randrange(self.node_count + 1)}"
        pv = rng.choice([*(v["metadata"]["name"] for v in self.volumes), "pv-gone"])
        attachment = volume_attachment(name, node, rng.choice(["a.csi", "b.csi", EBS, ""]), pv)
        if rng.random() < 0.1:
            attachment["spec"]["source"] = {}
        return attachment

    def random_pod_volume(self, index: int) -> JSON:
        rng = self.rng
        name = f"v{index}"
        roll = rng.random()
        if roll < self.rare:
            return rng.choice(
                [
                    pvc_volume("", name),
                    {"name": name, "awsElasticBlockStore": {"volumeID": "aws://zone-a/bad"}},
                    {**ephemeral_volume(name), "_owned": False},
                ]
            )
        if roll < 0.6:
            claims = [c["metadata"]["name"] for c in self.claims]
            return pvc_volume(rng.choice([*claims, "c-gone"] if rng.random() < 0.05 else claims), name)
        if roll < 0.68:
            return {**ephemeral_volume(name), "_owned": True}
        if roll < 0.8:
            return {"name": name, "awsElasticBlockStore": {"volumeID": f"vol-h{rng.randrange(6)}"}}
        if roll < 0.88:
            return {"name": name, "portworxVolume": {"volumeID": f"h{rng.randrange(6)}"}}
        if roll < 0.92:
            return {"name": name, "azureFile": {"secretName": "s", "shareName": "x"}}
        return {"name": name, "emptyDir": {}}

    def random_pod(self, node_name: str | None = None) -> JSON:
        self.pod_number += 1
        volumes = [self.random_pod_volume(index) for index in range(self.rng.randint(0, 3))]
        return pod_with(f"p{self.pod_number}", volumes, node_name=node_name)

    def ephemeral_claims(self, pods: list[JSON]) -> list[JSON]:
        """The claims of the pods' ephemeral volumes: the pod's own, or (``_owned`` False) another's."""
        made = []
        for pod in pods:
            for item in pod["spec"]["volumes"]:
                owned = item.pop("_owned", None)
                if owned is not None:
                    name = f"{pod['metadata']['name']}-{item['name']}"
                    owner = pod["metadata"]["uid"] if owned else "someone-else"
                    made.append(
                        claim(name, owner_uid=owner, storage_class_name=self.rng.choice(["sc-a", "sc-b"]))
                    )
        return made

    def mutate(self) -> None:
        """One change of any kind, through the paths the runtime uses (watch events, assume, the table)."""
        rng = self.rng
        plugin, table = self.plugin, self.table
        choice = rng.randrange(11)
        names = [table.names[slot] for slot in table.active_slots()]
        if choice == 0 and names:
            pod = self.random_pod(node_name=rng.choice(names))
            for made in self.ephemeral_claims([pod]):
                plugin.claims.event("ADDED", made)
            table.add_pod(PodInfo.from_pod(pod), pod["spec"]["nodeName"])
        elif choice == 1:
            placed = [pod for pod, _slot in table.all_pods()]
            if placed:
                table.remove_pod(rng.choice(placed).key)
        elif choice in (2, 3):
            changed = self.random_claim(rng.choice(self.claims)["metadata"]["name"])
            changed["metadata"]["resourceVersion"] = str(rng.randrange(1000, 10**6))
            if choice == 2:
                plugin.claims.event("MODIFIED", changed)
            else:
                plugin.claims.assume(changed)  # the scheduler's own write: no listener hears it
        elif choice == 4 and self.volumes:
            gone = rng.choice(self.volumes)
            if plugin.volumes.get(gone["metadata"]["name"]) is not None:
                plugin.volumes.event("DELETED", gone)
            else:
                plugin.volumes.event("ADDED", self.random_volume(gone["metadata"]["name"]))
        elif choice == 5:
            name = f"node-{rng.randrange(self.node_count)}"
            if rng.random() < 0.2 and plugin.csi_nodes.get(name) is not None:
                plugin.csi_nodes.event("DELETED", plugin.csi_nodes.get(name) or {})
            else:
                plugin.csi_nodes.event("MODIFIED", self.random_csi_node(name))
        elif choice == 6:
            attachments = plugin.attachments.list()
            if attachments and rng.random() < 0.5:
                plugin.attachments.event("DELETED", rng.choice(attachments))
            else:
                plugin.attachments.event("ADDED", self.random_attachment(f"va-x{rng.randrange(100)}"))
        elif choice == 7 and len(names) > 1:
            table.remove_node(rng.choice(names))
        elif choice == 8:
            gone = [f"node-{i}" for i in range(self.node_count) if table.slot_of(f"node-{i}") is None]
            if gone:
                table.add_node(nodes(self.node_count)[int(rng.choice(gone).split("-")[1])])
        elif choice == 9:
            provisioner = rng.choice(["a.csi", "b.csi", "kubernetes.io/aws-ebs", PX_PLUGIN])
            changed = storage_class(rng.choice(["sc-a", "sc-b", "sc-ebs"]), provisioner=provisioner)
            changed["metadata"]["resourceVersion"] = str(rng.randrange(2, 10**6))
            plugin.classes.event("MODIFIED", changed)
        elif choice == 10:
            placed = [pod for pod, _slot in table.all_pods()]
            if placed:  # a pod moved off its node and back, as in preemption's dry runs
                moved = rng.choice(placed)
                node = table.node_of_pod(moved.key)
                table.remove_pod(moved.key)
                table.add_pod(moved, node or "")

    def incoming(self) -> PodInfo:
        pod = self.random_pod()
        for made in self.ephemeral_claims([pod]):
            if self.rng.random() < 0.9:
                self.plugin.claims.event("ADDED", made)
        return PodInfo.from_pod(pod)


@pytest.mark.parametrize(("rare", "prune_floor"), [(0.0, None), (0.03, None), (0.03, 1)])
def test_the_fast_path_decides_as_upstream_on_random_clusters(
    rare: float, prune_floor: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random clusters, pods and changes: every candidate as a per-node transcription of csi.go says
    (``prune_floor``: the plugin forgets the counts of pods gone from the table at every chance)."""
    if prune_floor is not None:
        monkeypatch.setattr(csi, "_PRUNE_FLOOR", prune_floor)
    rng = random.Random(20251123 + int(rare * 100) + (prune_floor or 0))
    compared = rejected = errors = 0
    for _ in range(120):
        world = World(rng, rare)
        for _round in range(8):
            pod = world.incoming()
            table = world.table
            order = table.node_order()
            start = rng.randrange(len(order))
            for candidates in (
                np.concatenate([order[start:], order[:start]]),
                np.array(rng.sample(order.tolist(), min(len(order), rng.randint(1, 3))), dtype=np.intp),
            ):
                got = outcomes(world.plugin, pod, table, candidates)
                assert got == expected_outcomes(world.plugin, pod, table, candidates)
                compared += 1
                errors += isinstance(got, str)
                rejected += isinstance(got, dict) and bool(got)
            for _change in range(rng.randint(1, 3)):
                world.mutate()
    # The draw reaches every kind of answer.
    assert rejected > compared // 10 and (errors > compared // 20 if rare else errors == 0), (
        compared,
        rejected,
        errors,
    )


def test_near_the_limit_shared_volumes_and_the_pods_own_count_once() -> None:
    """Nodes whose pods could reach the limit are counted exactly: shared volumes count once."""
    objects = [csi_node("node-0", {DRIVER: 2}), *bound("a"), *bound("b"), *bound("c", handle="h-a")]
    plugin = plugin_with(objects)
    # Three claims on the node, two volumes (c is bound to a's handle): room for one more.
    pods = [on_node("x", "node-0", "a", "c"), on_node("y", "node-0", "a")]
    table = NodeTable.from_objects(nodes(1), pods)
    plugin.claims.event("ADDED", claim("d", volume_name="pv-d", bound=True))
    plugin.volumes.event("ADDED", volume("pv-d", csi=(DRIVER, "h-d")))
    assert rejections(plugin, pod_using("b"), table) == {}
    assert rejections(plugin, pod_using("a", "c"), table) == {}  # already there
    assert rejections(plugin, pod_using("b", "d"), table) == {"node-0": EXCEEDED}


def test_an_existing_pods_failing_volume_fails_the_cycle_on_nodes_with_any_limit() -> None:
    """Upstream counts the pods of any node with a limit, whatever its drivers: their errors count."""
    stranger = claim("x-scratch", owner_uid="another-pod")
    pod = pod_with("x", [ephemeral_volume("scratch")], node_name="node-1")
    objects = [csi_node("node-1", {"other.csi": 5}), stranger, *bound("a")]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(2), [pod])
    message = (
        'running "NodeVolumeLimits" filter plugin: PVC default/x-scratch was not created for pod '
        "default/x (pod is not owner)"
    )
    with pytest.raises(NodeVolumeLimitsError, match="pod is not owner") as caught:
        rejections(plugin, pod_using("a"), table)
    assert str(caught.value) == message
    # Without a limit on the node, upstream never reads its pods.
    plugin.csi_nodes.event("MODIFIED", csi_node("node-1", {"other.csi": None}))
    assert rejections(plugin, pod_using("a"), table) == {}


def test_an_error_on_some_nodes_wins_over_a_missing_claim() -> None:
    """A bad inline volume errs on nodes with a CSINode (EBS migrated); a missing claim rejects elsewhere."""
    bad = {"name": "disk", "awsElasticBlockStore": {"volumeID": "aws://zone-a/bad"}}
    pod = PodInfo.from_pod(pod_with("web", [bad, pvc_volume("nope")]))
    plugin = plugin_with([csi_node("node-1", {})])
    missing = 'looking up PVC default/nope: persistentvolumeclaim "nope" not found [unresolvable]'
    assert rejections(plugin, pod, NodeTable.from_objects(nodes(1))) == {"node-0": [missing]}
    with pytest.raises(NodeVolumeLimitsError, match=r"converting volume\(disk\) from inline to csi"):
        rejections(plugin, pod, NodeTable.from_objects(nodes(2)))


def test_the_schedulers_own_writes_and_every_change_reach_the_filter() -> None:
    """Assumed claims (no event), CSINode updates, attachments and nodes coming and going."""
    objects = [
        csi_node("node-0", {DRIVER: 2}),
        storage_class("local", provisioner=DRIVER),
        claim("a", storage_class_name="local"),
        claim("b", storage_class_name="local"),
        *bound("c", handle="h-shared"),
        *bound("e"),
    ]
    plugin = plugin_with(objects)
    table = NodeTable.from_objects(nodes(1), [on_node("x", "node-0", "a", "b")])
    assert rejections(plugin, pod_using("c"), table) == {"node-0": EXCEEDED}
    # The scheduler assumes "a" bound to a volume of c's handle: it is then the same volume.
    plugin.volumes.event("ADDED", volume("pv-shared", csi=(DRIVER, "h-shared")))
    plugin.claims.assume(claim("a", volume_name="pv-shared", bound=True, resource_version="11"))
    assert rejections(plugin, pod_using("c"), table) == {}
    plugin.csi_nodes.event("MODIFIED", csi_node("node-0", {DRIVER: 1}))
    assert rejections(plugin, pod_using("c"), table) == {}  # over the limit, but adds no volume
    assert rejections(plugin, pod_using("e"), table) == {"node-0": EXCEEDED}
    plugin.csi_nodes.event("MODIFIED", csi_node("node-0", {DRIVER: 3}))
    assert rejections(plugin, pod_using("e"), table) == {}
    plugin.volumes.event("ADDED", volume("pv-other", csi=(DRIVER, "h-other")))
    plugin.attachments.event("ADDED", volume_attachment("va", "node-0", DRIVER, "pv-other"))
    assert rejections(plugin, pod_using("e"), table) == {"node-0": EXCEEDED}
    plugin.volumes.event("DELETED", volume("pv-other", csi=(DRIVER, "h-other")))
    assert rejections(plugin, pod_using("e"), table) == {}  # an attachment of no PV counts nothing
    plugin.volumes.event("ADDED", volume("pv-other", csi=(DRIVER, "h-other")))
    assert rejections(plugin, pod_using("e"), table) == {"node-0": EXCEEDED}
    plugin.attachments.event("DELETED", volume_attachment("va", "node-0", DRIVER, "pv-other"))
    assert rejections(plugin, pod_using("e"), table) == {}
    # node-0 leaves (its slot goes to node-1, which has no CSINode) and comes back.
    table.remove_node("node-0")
    table.add_node(nodes(2)[1])
    assert rejections(plugin, pod_using("e"), table) == {}
    table.add_node(nodes(1)[0])
    plugin.csi_nodes.event("MODIFIED", csi_node("node-0", {DRIVER: 2}))
    assert rejections(plugin, pod_using("e"), table) == {"node-0": EXCEEDED}


def test_pods_volume_bounds_follow_the_table() -> None:
    """The index's upper bounds: claims, ephemeral and migratable inline volumes; never below the count."""
    fallible_inline = {"name": "d", "awsElasticBlockStore": {"volumeID": "aws://zone-a/bad"}}
    assert pod_volume_bound(pod_with("p", [pvc_volume("a"), ephemeral_volume("e")])) == (2, True)
    assert pod_volume_bound(pod_with("p", [{"name": "f", "azureFile": {"shareName": "s"}}])) == (0, False)
    assert pod_volume_bound(pod_with("p", [fallible_inline, {"name": "t", "emptyDir": {}}])) == (1, True)
    assert pod_volume_bound(pod_with("p", [pvc_volume("")])) == (1, True)
    table = NodeTable.from_objects(nodes(2), [on_node("x", "node-0", "a", "b")])
    index = table.index(INDEX_NAME, VolumeBounds)
    volumes, fallible, versions = index.arrays()
    assert volumes[table.slot_of("node-0")] == 2 and fallible.sum() == 0
    before = int(versions[table.slot_of("node-0")])
    table.remove_pod("default/x")
    volumes, _fallible, versions = index.arrays()
    assert volumes[table.slot_of("node-0")] == 0 and versions[table.slot_of("node-0")] != before
    for number in range(200):  # the table grows: so do the index's arrays
        table.add_node(nodes(1)[0] | {"metadata": {"name": f"more-{number}"}})
    table.add_pod(PodInfo.from_pod(on_node("y", "more-199", "a")), "more-199")
    volumes, _fallible, _versions = index.arrays()
    assert len(volumes) == table.capacity and volumes[table.slot_of("more-199")] == 1
