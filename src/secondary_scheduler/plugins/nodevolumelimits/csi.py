"""NodeVolumeLimits: a node takes at most as many volumes of a CSI driver as its CSINode allows.

kube-scheduler 1.34's CSI limits plugin (``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go``).
A node's limit per driver is its CSINode's ``spec.drivers[].allocatable.count``; a node with
no CSINode, or no count for a driver, has no limit for it. On each node, the plugin counts
the distinct volumes (``driver/volumeHandle``) already there, from the pods on the node,
bound or assumed, and from VolumeAttachments to the node, and adds the pod's new ones:

- a claim bound to a CSI volume counts as that volume;
- an unbound claim (or one whose volume is gone) counts as a volume of its class's
  provisioner, under a name of its own (a random prefix, the namespace and claim);
- in-tree volumes (PVs or inline ones of AWS EBS, GCE PD, Azure Disk, Cinder, and Portworx
  when the CSINode lists it as migrated) count as volumes of the CSI driver that replaced
  them, with the translated handle, once the node has a CSINode;
- a volume the node already has does not count twice.

A pod over the limit gets ``node(s) exceed max volume count`` (Unschedulable: evicting pods
frees volumes). A claim of the pod that does not exist fails it everywhere, unresolvably.
"""

from __future__ import annotations

import secrets
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import KubeObject, Slots
from secondary_scheduler.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import (
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
)
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterError,
    FilterPlugin,
    PodPredicate,
    PreFilterPlugin,
    Rejection,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.plugins.nodevolumelimits import csitranslation
from secondary_scheduler.plugins.volumebinding import storagehelpers as helpers

REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

"""Volumes the attach/detach controller attached to nodes (kube-scheduler 1.34 counts them too)."""

_LOWER_ALPHANUMERIC = string.ascii_lowercase + string.digits
_COUNTED_LIMIT = 100_000
"""Pods whose counted volumes are kept at most (the cache restarts empty beyond it)."""


class NodeVolumeLimitsError(FilterError):
    """An Error status from Filter (an ephemeral claim that is not the pod's, a volume that
    cannot be translated); the cycle fails and the pod backs off, as upstream's does."""


class _PodVolumeError(Exception):
    def __init__(self, message: str, unresolvable: bool) -> None:
        super().__init__(message)
        self.unresolvable = unresolvable


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    name: ClassVar[str] = "NodeVolumeLimits"

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        self.csi_nodes = handle.informer(CSI_NODES)
        self.volumes = handle.informer(PERSISTENT_VOLUMES)
        self.claims = handle.informer(PERSISTENT_VOLUME_CLAIMS)
        self.classes = handle.informer(STORAGE_CLASSES)
        self.attachments = handle.informer(VOLUME_ATTACHMENTS)
        self.random_prefix = "".join(secrets.choice(_LOWER_ALPHANUMERIC) for _ in range(32))
        """Names unbound claims' volumes apart from real volume handles (rand.String(32) upstream)."""
        self._counted: dict[tuple[str, object], dict[str, str]] = {}
        """(pod UID, CSINode signature) -> the pod's counted volumes, until a claim, volume or class changes.

        A pod's volumes are immutable, so what it counts for changes only with the objects
        they resolve through; every Filter call reads the volumes of all pods on the nodes.
        """
        for informer in (self.claims, self.volumes, self.classes):
            informer.add_listener(self._forget_counted)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.UPDATE), _csi_node_limit_grew),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), _deleted_pod_may_help),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), _added_claim_may_help
            ),
            ClusterEventWithHint(ClusterEvent("VolumeAttachment", ActionType.DELETE), _attachment_may_help),
        )

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        for volume in helpers.pod_volumes(pod.obj):
            if (
                volume.get("persistentVolumeClaim") is not None
                or volume.get("ephemeral") is not None
                or csitranslation.plugin_of_inline(volume) is not None
            ):
                return SUCCESS
        return SKIP

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        rejected = np.zeros(len(candidates), dtype=np.bool_)
        if not helpers.pod_volumes(pod.obj):
            return []
        new_by_signature: dict[object, dict[str, str]] = {}
        attachments: dict[str, dict[str, str]] | None = None
        for position, slot in enumerate(candidates.tolist()):
            node_name = table.names[slot]
            csi_node = self.csi_nodes.get(node_name)
            signature = _migration_signature(csi_node)
            new_volumes = new_by_signature.get(signature)
            if new_volumes is None:
                new_volumes = {}
                try:
                    self._attachable_volumes(pod.obj, csi_node, True, new_volumes)
                except _PodVolumeError as error:
                    if not error.unresolvable:
                        raise NodeVolumeLimitsError(
                            f'running "{self.name}" filter plugin: {error}'
                        ) from error
                    every = np.ones(len(candidates), dtype=np.bool_)
                    return [Rejection(every, str(error), unresolvable=True)]
                new_by_signature[signature] = new_volumes
            if not new_volumes:
                continue
            limits = volume_limits(csi_node)
            if not limits or not any(driver in limits for driver in new_volumes.values()):
                continue
            attached: dict[str, str] = {}
            for existing in table.pods[slot].values():
                attached.update(self._existing_pod_volumes(existing, csi_node, signature))
            if attachments is None:
                attachments = self._attachments_by_node()
            counts: Counter[str] = Counter(attached.values())
            for unique, driver in attachments.get(node_name, {}).items():
                if unique not in attached:
                    counts[driver] += 1
            adding = Counter(driver for unique, driver in new_volumes.items() if unique not in attached)
            rejected[position] = any(
                driver in limits and counts[driver] + count > limits[driver]
                for driver, count in adding.items()
            )
        return [Rejection(rejected, REASON_MAX_VOLUME_COUNT_EXCEEDED)]

    def _existing_pod_volumes(
        self, pod: PodInfo, csi_node: KubeObject | None, signature: object
    ) -> dict[str, str]:
        key = (pod.uid or pod.key, signature)
        counted = self._counted.get(key)
        if counted is None:
            counted = {}
            try:
                self._attachable_volumes(pod.obj, csi_node, False, counted)
            except _PodVolumeError as error:
                raise NodeVolumeLimitsError(f'running "{self.name}" filter plugin: {error}') from error
            if len(self._counted) >= _COUNTED_LIMIT:
                self._counted.clear()
            self._counted[key] = counted
        return counted

    def _forget_counted(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        self._counted.clear()

    def _attachable_volumes(
        self, pod: KubeObject, csi_node: KubeObject | None, new_pod: bool, result: dict[str, str]
    ) -> None:
        """filterAttachableVolumes: add the pod's CSI volumes as ``driver/handle`` -> driver."""
        namespace = helpers.namespace_of(pod) or "default"
        pod_name = helpers.name_of(pod)
        for volume in helpers.pod_volumes(pod):
            if volume.get("persistentVolumeClaim") is not None:
                claim_name = str(volume["persistentVolumeClaim"].get("claimName") or "")
                ephemeral = False
            elif volume.get("ephemeral") is not None:
                claim_name = f"{pod_name}-{volume.get('name', '')}"
                ephemeral = True
            else:
                self._inline_volume(volume, csi_node, result)
                continue
            if not claim_name:
                raise _PodVolumeError("PersistentVolumeClaim had no name", unresolvable=False)
            claim = self.claims.get(claim_name, namespace)
            if claim is None:
                if new_pod:
                    # The pod cannot run without its claim: it waits until the claim exists.
                    message = helpers.not_found(helpers.PVC_RESOURCE, claim_name)
                    raise _PodVolumeError(
                        f"looking up PVC {namespace}/{claim_name}: {message}", unresolvable=True
                    )
                continue  # an existing pod's missing claim is not counted
            if ephemeral:
                problem = helpers.volume_is_for_pod(pod, claim)
                if problem is not None:
                    raise _PodVolumeError(problem, unresolvable=False)
            driver, handle = self._driver_and_handle(csi_node, claim)
            if driver and handle:
                result[f"{driver}/{handle}"] = driver

    def _inline_volume(
        self, volume: Mapping[str, Any], csi_node: KubeObject | None, result: dict[str, str]
    ) -> None:
        """checkAttachableInlineVolume: an inline in-tree volume counts once its plugin migrated."""
        plugin = csitranslation.plugin_of_inline(volume)
        if plugin is None or not csitranslation.migration_on_for_limits(plugin.name, csi_node):
            return
        try:
            handle = csitranslation.inline_volume_handle(plugin, volume)
        except csitranslation.TranslationError as error:
            raise _PodVolumeError(
                f"converting volume({volume.get('name', '')}) from inline to csi: {error}", unresolvable=False
            ) from error
        result[f"{plugin.driver}/{handle}"] = plugin.driver

    def _driver_and_handle(self, csi_node: KubeObject | None, claim: KubeObject) -> tuple[str, str]:
        """getCSIDriverInfo: the claim's CSI driver and volume handle, ("", "") when not counted."""
        volume_name = str(helpers.spec(claim).get("volumeName") or "")
        volume = self.volumes.get(volume_name) if volume_name else None
        if volume is None:
            return self._driver_from_class(csi_node, claim)
        csi = helpers.spec(volume).get("csi")
        if csi is not None:
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        plugin = csitranslation.plugin_of_pv(volume)
        if plugin is None or not csitranslation.migration_on_for_limits(plugin.name, csi_node):
            return "", ""
        try:
            return plugin.driver, csitranslation.pv_volume_handle(plugin, volume)
        except csitranslation.TranslationError:
            return "", ""

    def _driver_from_class(self, csi_node: KubeObject | None, claim: KubeObject) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: the class's provisioner, and a name made up for the claim."""
        class_name = helpers.claim_class(claim)
        if not class_name:
            return "", ""  # no class: an Immediate claim, bound before it matters
        storage_class = self.classes.get(class_name)
        if storage_class is None:
            return "", ""
        handle = f"{self.random_prefix}-{helpers.namespace_of(claim)}/{helpers.name_of(claim)}"
        provisioner = str(storage_class.get("provisioner") or "")
        plugin = csitranslation.BY_NAME.get(provisioner)
        if plugin is not None:
            if not csitranslation.migration_on_for_limits(provisioner, csi_node):
                return "", ""
            return plugin.driver, handle
        return provisioner, handle

    def _attachments_by_node(self) -> dict[str, dict[str, str]]:
        """getNodeVolumeAttachmentInfo for every node: node -> ``attacher/handle`` -> attacher."""
        by_node: dict[str, dict[str, str]] = {}
        for attachment in self.attachments:
            spec = helpers.spec(attachment)
            attacher = str(spec.get("attacher") or "")
            volume_name = (spec.get("source") or {}).get("persistentVolumeName")
            if not attacher or not volume_name:
                continue
            volume = self.volumes.get(str(volume_name))
            csi = helpers.spec(volume).get("csi") if volume is not None else None
            if csi is None:
                continue
            node = str(spec.get("nodeName") or "")
            by_node.setdefault(node, {})[f"{attacher}/{csi.get('volumeHandle', '')}"] = attacher
        return by_node


def volume_limits(csi_node: KubeObject | None) -> dict[str, int]:
    """Driver -> the node's volume limit for it (getVolumeLimits); a driver without a count has none."""
    limits: dict[str, int] = {}
    for driver in helpers.spec(csi_node).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name", ""))] = int(count)
    return limits


def _migration_signature(csi_node: KubeObject | None) -> object:
    """What of a CSINode the pod's own volumes depend on: whether it exists, and what migrated."""
    if csi_node is None:
        return None
    return helpers.annotations_of(csi_node).get(csitranslation.MIGRATED_PLUGINS_ANNOTATION, "")


def _csi_node_limit_grew(pod: PodInfo, old: Any, new: Any) -> bool:
    """Some driver's count went up (a driver that had none counts as 0 before)."""
    before = volume_limits(old)
    return any(limit > before.get(driver, 0) for driver, limit in volume_limits(new).items())


def _deleted_pod_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A pod that was on (or nominated to) a node and used claims or migratable volumes went away."""
    deleted: PodInfo | None = old
    if deleted is None:
        return False
    volumes = helpers.pod_volumes(deleted.obj)
    if not volumes:
        return False
    if not deleted.node_name and not (deleted.obj.get("status") or {}).get("nominatedNodeName"):
        return False
    return any(
        volume.get("persistentVolumeClaim") is not None
        or volume.get("ephemeral") is not None
        or csitranslation.plugin_of_inline(volume) is not None
        for volume in volumes
    )


def _added_claim_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A claim of the pod was created (its volumes' or its ephemeral volumes' claim)."""
    if new is None or helpers.namespace_of(new) != pod.namespace:
        return False
    return any(ref.name == helpers.name_of(new) for ref in helpers.pod_claims(pod.obj))


def _attachment_may_help(pod: PodInfo, old: Any, new: Any) -> bool:
    """A VolumeAttachment went away and the pod uses claims (or a migratable inline volume of that driver)."""
    attachment = old
    for volume in helpers.pod_volumes(pod.obj):
        if volume.get("persistentVolumeClaim") is not None:
            return True
        plugin = csitranslation.plugin_of_inline(volume)
        if (
            plugin is not None
            and attachment is not None
            and helpers.spec(attachment).get("attacher") == plugin.driver
        ):
            return True
    return False
