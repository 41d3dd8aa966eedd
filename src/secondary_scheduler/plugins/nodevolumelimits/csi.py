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

Upstream counts every pod's volumes on every node, each cycle. Here Filter does that only
on the nodes that could be over a limit, found with numpy over the candidates:

- a pod's volumes depend on the node only through its CSINode's migration class (none,
  one, one listing Portworx): the new pod's are worked out once per class;
- per slot, an index (``NodeTable.index``) keeps how many volumes the node's pods could
  count at most (their claim, ephemeral and migratable inline volumes), and a view of the
  CSINodes and VolumeAttachments keeps each driver's limit and the attached volumes;
- a node whose pods and attachments stay within every limit of the new volumes' drivers
  even if none were shared passes as is; the others, and the nodes whose pods' volumes
  could fail to count (upstream's Error), are counted exactly, node by node, from each
  pod's counted volumes (remembered until an object they were read from changes).
"""

from __future__ import annotations

import secrets
import string
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from secondary_scheduler.framework.aliases import BoolArray, IntArray, KubeObject, Slots
from secondary_scheduler.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import (
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    Informer,
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
from secondary_scheduler.framework.storage import csitranslation
from secondary_scheduler.framework.storage import volumes as helpers
from secondary_scheduler.kube.store import object_key

REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
INDEX_NAME = "NodeVolumeLimits"
"""The table's index of the most volumes each node's pods can count (``VolumeBounds``)."""

_LOWER_ALPHANUMERIC = string.ascii_lowercase + string.digits
_PRUNE_FLOOR = 4096
"""Counted pods kept before those no longer on the table are forgotten (then twice what is left)."""
_NO_LIMIT = np.iinfo(np.int64).max // 4
"""A driver's limit on a node that has none for it: no count of volumes reaches it."""
_NO_LIMITS: Mapping[str, int] = MappingProxyType({})
_FEW_CANDIDATES = 16

_Getter = Callable[[str, str | None], KubeObject | None]
_Dependency = tuple[_Getter, str, str | None, KubeObject | None]
"""(an informer's ``get``, name, namespace, what it returned): an object a count was read from."""


class NodeVolumeLimitsError(FilterError):
    """An Error status from Filter (an ephemeral claim that is not the pod's, a volume that
    cannot be translated); the cycle fails and the pod backs off, as upstream's does."""


class _PodVolumeError(Exception):
    def __init__(self, message: str, unresolvable: bool) -> None:
        super().__init__(message)
        self.unresolvable = unresolvable


@dataclass(slots=True)
class _Counted:
    """A pod's volumes as counted on nodes of one migration class, or why they cannot be."""

    spec: Sequence[Mapping[str, Any]]
    """The pod's ``spec.volumes`` (immutable in Kubernetes) that were counted."""
    dependencies: tuple[_Dependency, ...]
    volumes: dict[str, str]
    """``driver/handle`` -> driver (filterAttachableVolumes' result); never mutated."""
    error: tuple[str, bool] | None
    """(message, unresolvable) when counting failed."""

    def still_holds(self, pod: PodInfo) -> bool:
        """Same volumes, and every object read then is still what the informers hold (identity:
        informers replace objects, never change them; the scheduler's assumed writes count)."""
        return self.spec is helpers.pod_volumes(pod.obj) and all(
            get(name, namespace) is obj for get, name, namespace, obj in self.dependencies
        )


def pod_volume_bound(pod: KubeObject) -> tuple[int, bool]:
    """(the most volumes the pod can count on any node, whether counting them can fail).

    Each claim, ephemeral and inline in-tree volume adds at most one volume. Counting an
    existing pod fails (upstream's Error) only for a claim without a name, an ephemeral
    claim that is not the pod's, or an inline volume its translation refuses.
    """
    countable = 0
    fallible = False
    for volume in helpers.pod_volumes(pod):
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            countable += 1
            fallible = fallible or not source.get("claimName")
        elif volume.get("ephemeral") is not None:
            countable += 1
            fallible = True
        else:
            plugin = csitranslation.plugin_of_inline(volume)
            if plugin is None or not csitranslation.migration_on_in_class(
                plugin.name, csitranslation.CSI_NODE_PORTWORX
            ):
                continue  # never counted: its migration is off on every node
            countable += 1
            if not fallible:
                try:
                    csitranslation.inline_volume_handle(plugin, volume)
                except csitranslation.TranslationError:
                    fallible = True
    return countable, fallible


class VolumeBounds:
    """Per slot: the most volumes the node's pods can count, how many of its pods' counts can
    fail, and a version that changes whenever a pod with volumes arrives or leaves.

    Kept up to date by the table as pods are placed and removed (preemption's dry runs and
    nominated pods included); depends on the pods' specs only, never on claims or volumes.
    """

    def __init__(self, table: NodeTable) -> None:
        self._table = table
        self._volumes: IntArray = np.zeros(table.capacity, dtype=np.int64)
        self._fallible: IntArray = np.zeros(table.capacity, dtype=np.int64)
        self._versions: IntArray = np.zeros(table.capacity, dtype=np.int64)
        self._next_version = 1
        for pod, slot in table.all_pods():
            self._update(slot, pod, 1)

    def arrays(self) -> tuple[IntArray, IntArray, IntArray]:
        """(volumes, fallible pods, versions) per slot, as long as the table's capacity."""
        if len(self._volumes) < self._table.capacity:
            self._grow()
        return self._volumes, self._fallible, self._versions

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._update(slot, pod, 1)

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._update(slot, pod, -1)

    def _update(self, slot: int, pod: PodInfo, sign: int) -> None:
        if not helpers.pod_volumes(pod.obj):
            return  # counts nothing anywhere
        countable, fallible = pod_volume_bound(pod.obj)
        if slot >= len(self._volumes):
            self._grow()
        self._volumes[slot] += sign * countable
        if fallible:
            self._fallible[slot] += sign
        self._versions[slot] = self._next_version  # unique: a pod moved off and back is a change too
        self._next_version += 1

    def _grow(self) -> None:
        extra = self._table.capacity - len(self._volumes)
        self._volumes = np.concatenate([self._volumes, np.zeros(extra, dtype=np.int64)])
        self._fallible = np.concatenate([self._fallible, np.zeros(extra, dtype=np.int64)])
        self._versions = np.concatenate([self._versions, np.zeros(extra, dtype=np.int64)])


@dataclass(slots=True)
class _NodeCount:
    """Upstream's count of one node's existing volumes, and what it was made from."""

    pods_version: int
    node_class: int
    attachment_version: int
    dependencies: tuple[_Dependency, ...]
    """Of every pod on the node (see ``_Counted``)."""
    attached: dict[str, str]
    """The pods' volumes, ``driver/handle`` -> driver."""
    counts: Counter[str]
    """Driver -> its distinct volumes on the node, the pods' and the attachments'."""

    def still_holds(self, pods_version: int, node_class: int, attachment_version: int) -> bool:
        """Same pods, class and attachments, and every object the pods' counts read unchanged."""
        if (
            self.pods_version != pods_version
            or self.node_class != node_class
            or self.attachment_version != attachment_version
        ):
            return False
        return all(get(name, namespace) is obj for get, name, namespace, obj in self.dependencies)


class _NodeView:
    """Per slot of one table: what the nodes' CSINodes and VolumeAttachments say."""

    def __init__(self) -> None:
        self.names: list[str] = []
        """The table's names when built: a node added, removed or moved rebuilds the view."""
        self.csi_version = -1
        self.attachment_version = -1
        self.node_class: npt.NDArray[np.int8] = np.zeros(0, dtype=np.int8)
        """csitranslation.limits_migration_class of the node's CSINode."""
        self.has_limits: BoolArray = np.zeros(0, dtype=np.bool_)
        """Whether the CSINode has a count for any driver (upstream counts nothing otherwise)."""
        self.limit_maps: list[Mapping[str, int]] = []
        """getVolumeLimits of the node's CSINode."""
        self.limits: dict[str, IntArray] = {}
        """Driver -> its limit per slot (``_NO_LIMIT`` where the node has none)."""
        self.attached: IntArray = np.zeros(0, dtype=np.int64)
        """Distinct volumes VolumeAttachments attach to the node."""
        self.counts: dict[int, _NodeCount] = {}
        """Slot -> its last exact count (a node near a limit is counted again each cycle)."""


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
        self._counted: dict[tuple[str, str, int, bool], _Counted] = {}
        """(pod key, UID, migration class, new pod) -> the pod's counted volumes."""
        self._prune_at = _PRUNE_FLOOR
        self._views: weakref.WeakKeyDictionary[NodeTable, _NodeView] = weakref.WeakKeyDictionary()
        self._csi_version = 0
        self._attachment_version = 0
        self._attachment_map: dict[str, dict[str, str]] | None = None
        self.csi_nodes.add_listener(self._csi_node_changed)
        self.attachments.add_listener(self._attachment_changed)
        self.volumes.add_listener(self._volume_changed)

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
        """Upstream's Filter on every candidate; counting exactly only where a limit may be reached.

        A candidate where upstream's Filter errs fails the whole cycle, as there: the first
        such candidate (in candidate order) gives the message.
        """
        if not helpers.pod_volumes(pod.obj):
            return []
        if len(self._counted) > self._prune_at:
            self._forget_gone_pods(table, pod)
        view = self._node_view(table, candidates)
        bound, fallible, versions = table.index(INDEX_NAME, VolumeBounds).arrays()
        classes = view.node_class[candidates]
        rejected = np.zeros(len(candidates), dtype=np.bool_)
        unresolvable: dict[str, BoolArray] = {}
        error: tuple[int, str] | None = None
        new_by_class: dict[int, dict[str, str]] = {}
        suspects: list[Slots] = []
        for node_class in np.flatnonzero(np.bincount(classes, minlength=1)).tolist():
            positions = np.flatnonzero(classes == node_class)
            try:
                new_volumes = self._pod_volumes(pod, node_class, new_pod=True)
            except _PodVolumeError as failure:
                if failure.unresolvable:
                    mask = unresolvable.setdefault(str(failure), np.zeros(len(candidates), dtype=np.bool_))
                    mask[positions] = True
                elif error is None or positions[0] < error[0]:
                    error = (int(positions[0]), str(failure))
                continue
            if not new_volumes:
                continue
            new_by_class[node_class] = new_volumes
            slots = candidates[positions]
            # Nodes without any limit pass; the others are counted if their pods' counts
            # can fail, or if their pods and attachments could reach a limit of a new volume's
            # driver (upper bounds: no volume shared between pods, none already there).
            at_risk = fallible[slots] > 0
            most = bound[slots] + view.attached[slots]
            for driver, count in Counter(new_volumes.values()).items():
                limits = view.limits.get(driver)
                if limits is not None:
                    at_risk |= most + count > limits[slots]
            suspects.append(positions[view.has_limits[slots] & at_risk])
        if suspects:
            for position in np.sort(np.concatenate(suspects)).tolist():
                if error is not None and position > error[0]:
                    break
                slot = int(candidates[position])
                node_class = int(classes[position])
                try:
                    counted = self._node_count(view, table, slot, node_class, int(versions[slot]))
                    rejected[position] = _exceeds(counted, view.limit_maps[slot], new_by_class[node_class])
                except _PodVolumeError as failure:
                    error = (position, str(failure))
                    break
        if error is not None:
            raise NodeVolumeLimitsError(f'running "{self.name}" filter plugin: {error[1]}')
        result = [Rejection(mask, message, unresolvable=True) for message, mask in unresolvable.items()]
        if rejected.any():
            result.append(Rejection(rejected, REASON_MAX_VOLUME_COUNT_EXCEEDED))
        return result

    def _node_count(
        self, view: _NodeView, table: NodeTable, slot: int, node_class: int, pods_version: int
    ) -> _NodeCount:
        """The volumes on one node (its pods', then its attachments'), as upstream's Filter counts them."""
        count = view.counts.get(slot)
        if count is not None and count.still_holds(pods_version, node_class, self._attachment_version):
            return count
        attached: dict[str, str] = {}
        dependencies: list[_Dependency] = []
        for existing in table.pods[slot].values():
            counted = self._counted_volumes(existing, node_class, new_pod=False)
            attached.update(counted.volumes)
            dependencies.extend(counted.dependencies)
        counts: Counter[str] = Counter(attached.values())
        for unique, driver in self._attachments_by_node().get(table.names[slot], {}).items():
            if unique not in attached:  # counted once, whether a pod or an attachment has it
                counts[driver] += 1
        count = _NodeCount(
            pods_version, node_class, self._attachment_version, tuple(dependencies), attached, counts
        )
        view.counts[slot] = count
        return count

    # -- each pod's volumes -------------------------------------------------------------

    def _forget_gone_pods(self, table: NodeTable, pod: PodInfo) -> None:
        """Forget the counts of pods the table no longer has (they hold objects perhaps deleted since)."""
        self._counted = {
            key: counted
            for key, counted in self._counted.items()
            if key[0] == pod.key or table.node_of_pod(key[0]) is not None
        }
        self._prune_at = max(_PRUNE_FLOOR, 2 * len(self._counted))

    def _pod_volumes(self, pod: PodInfo, node_class: int, *, new_pod: bool) -> dict[str, str]:
        """filterAttachableVolumes on a node of ``node_class``: ``driver/handle`` -> driver."""
        return self._counted_volumes(pod, node_class, new_pod=new_pod).volumes

    def _counted_volumes(self, pod: PodInfo, node_class: int, *, new_pod: bool) -> _Counted:
        """The pod's volumes on a node of ``node_class``, or _PodVolumeError; remembered until the
        pod or an object they were read from changes."""
        key = (pod.key, pod.uid, node_class, new_pod)
        counted = self._counted.get(key)
        if counted is None or not counted.still_holds(pod):
            dependencies: list[_Dependency] = []
            volumes: dict[str, str] = {}
            failure: tuple[str, bool] | None = None
            try:
                self._attachable_volumes(pod.obj, node_class, new_pod, volumes, dependencies)
            except _PodVolumeError as caught:
                failure = (str(caught), caught.unresolvable)
            spec = helpers.pod_volumes(pod.obj)
            counted = self._counted[key] = _Counted(spec, tuple(dependencies), volumes, failure)
        if counted.error is not None:
            raise _PodVolumeError(*counted.error)
        return counted

    def _attachable_volumes(
        self,
        pod: KubeObject,
        node_class: int,
        new_pod: bool,
        result: dict[str, str],
        dependencies: list[_Dependency],
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
                self._inline_volume(volume, node_class, result)
                continue
            if not claim_name:
                raise _PodVolumeError("PersistentVolumeClaim had no name", unresolvable=False)
            claim = _read(self.claims, claim_name, namespace, dependencies)
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
            driver, handle = self._driver_and_handle(node_class, claim, dependencies)
            if driver and handle:
                result[f"{driver}/{handle}"] = driver

    def _inline_volume(self, volume: Mapping[str, Any], node_class: int, result: dict[str, str]) -> None:
        """checkAttachableInlineVolume: an inline in-tree volume counts once its plugin migrated."""
        plugin = csitranslation.plugin_of_inline(volume)
        if plugin is None or not csitranslation.migration_on_in_class(plugin.name, node_class):
            return
        try:
            handle = csitranslation.inline_volume_handle(plugin, volume)
        except csitranslation.TranslationError as error:
            raise _PodVolumeError(
                f"converting volume({volume.get('name', '')}) from inline to csi: {error}", unresolvable=False
            ) from error
        result[f"{plugin.driver}/{handle}"] = plugin.driver

    def _driver_and_handle(
        self, node_class: int, claim: KubeObject, dependencies: list[_Dependency]
    ) -> tuple[str, str]:
        """getCSIDriverInfo: the claim's CSI driver and volume handle, ("", "") when not counted."""
        volume_name = str(helpers.spec(claim).get("volumeName") or "")
        volume = _read(self.volumes, volume_name, None, dependencies) if volume_name else None
        if volume is None:
            return self._driver_from_class(node_class, claim, dependencies)
        csi = helpers.spec(volume).get("csi")
        if csi is not None:
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        plugin = csitranslation.plugin_of_pv(volume)
        if plugin is None or not csitranslation.migration_on_in_class(plugin.name, node_class):
            return "", ""
        try:
            return plugin.driver, csitranslation.pv_volume_handle(plugin, volume)
        except csitranslation.TranslationError:
            return "", ""

    def _driver_from_class(
        self, node_class: int, claim: KubeObject, dependencies: list[_Dependency]
    ) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: the class's provisioner, and a name made up for the claim."""
        class_name = helpers.claim_class(claim)
        if not class_name:
            return "", ""  # no class: an Immediate claim, bound before it matters
        storage_class = _read(self.classes, class_name, None, dependencies)
        if storage_class is None:
            return "", ""
        handle = f"{self.random_prefix}-{helpers.namespace_of(claim)}/{helpers.name_of(claim)}"
        provisioner = str(storage_class.get("provisioner") or "")
        plugin = csitranslation.BY_NAME.get(provisioner)
        if plugin is not None:
            if not csitranslation.migration_on_in_class(provisioner, node_class):
                return "", ""
            return plugin.driver, handle
        return provisioner, handle

    # -- nodes: CSINodes and VolumeAttachments -----------------------------------------

    def _node_view(self, table: NodeTable, candidates: Slots) -> _NodeView:
        """The table's view, rebuilt when a CSINode, an attachment or the candidates' nodes changed.

        Only the candidates' slots need to hold the nodes they held (a few candidates: the
        one-node Filter calls of preemption and nominated pods; else the whole list, at C speed).
        """
        view = self._views.get(table)
        if view is None:
            view = self._views[table] = _NodeView()
        names = table.names
        moved = view.csi_version != self._csi_version or len(view.names) != len(names)
        if not moved and len(candidates) <= _FEW_CANDIDATES:
            moved = any(view.names[slot] != names[slot] for slot in candidates.tolist())
        elif not moved:
            moved = view.names != names
        if moved:
            self._fill_limits(view, table)
        if view.attachment_version != self._attachment_version:
            view.attached = np.zeros(table.capacity, dtype=np.int64)
            for node_name, volumes in self._attachments_by_node().items():
                slot = table.slot_of(node_name)
                if slot is not None:
                    view.attached[slot] = len(volumes)
            view.attachment_version = self._attachment_version
        return view

    def _fill_limits(self, view: _NodeView, table: NodeTable) -> None:
        capacity = table.capacity
        view.names = list(table.names)
        view.csi_version = self._csi_version
        view.attachment_version = -1  # slots may have moved
        view.node_class = np.zeros(capacity, dtype=np.int8)
        view.has_limits = np.zeros(capacity, dtype=np.bool_)
        view.limit_maps = [_NO_LIMITS] * capacity
        view.limits = {}
        view.counts = {}
        for csi_node in self.csi_nodes:
            slot = table.slot_of(object_key(csi_node))  # the key csiNodeLister.Get(node name) finds
            if slot is None:
                continue
            view.node_class[slot] = csitranslation.limits_migration_class(csi_node)
            limits = volume_limits(csi_node)
            view.limit_maps[slot] = limits
            view.has_limits[slot] = bool(limits)
            for driver, count in limits.items():
                column = view.limits.get(driver)
                if column is None:
                    column = view.limits[driver] = np.full(capacity, _NO_LIMIT, dtype=np.int64)
                column[slot] = count

    def _csi_node_changed(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        self._csi_version += 1

    def _attachment_changed(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        self._attachment_map = None
        self._attachment_version += 1

    def _volume_changed(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        """Attachments read a PV's CSI source only (immutable once the PV exists; binding keeps it)."""
        if helpers.spec(old).get("csi") != helpers.spec(new).get("csi"):
            self._attachment_changed(kind, old, new)

    def _attachments_by_node(self) -> dict[str, dict[str, str]]:
        """getNodeVolumeAttachmentInfo for every node: node -> ``attacher/handle`` -> attacher."""
        if self._attachment_map is not None:
            return self._attachment_map
        by_node: dict[str, dict[str, str]] = {}
        for attachment in self.attachments:
            spec = helpers.spec(attachment)
            attacher = str(spec.get("attacher") or "")
            volume_name = (spec.get("source") or {}).get("persistentVolumeName")
            if not attacher or volume_name is None:
                continue
            volume = self.volumes.get(str(volume_name))
            csi = helpers.spec(volume).get("csi") if volume is not None else None
            if csi is None:
                continue
            node = str(spec.get("nodeName") or "")
            by_node.setdefault(node, {})[f"{attacher}/{csi.get('volumeHandle', '')}"] = attacher
        self._attachment_map = by_node
        return by_node


def _read(
    informer: Informer, name: str, namespace: str | None, dependencies: list[_Dependency]
) -> KubeObject | None:
    """``informer.get``, noting what it returned among the objects a count depends on."""
    obj = informer.get(name, namespace)
    dependencies.append((informer.get, name, namespace, obj))
    return obj


def _exceeds(count: _NodeCount, limits: Mapping[str, int], new: Mapping[str, str]) -> bool:
    """Whether the new volumes the node does not have yet take a driver over its limit."""
    adding = Counter(driver for unique, driver in new.items() if unique not in count.attached)
    return any(
        driver in limits and count.counts[driver] + number > limits[driver]
        for driver, number in adding.items()
    )


def volume_limits(csi_node: KubeObject | None) -> dict[str, int]:
    """Driver -> the node's volume limit for it (getVolumeLimits); a driver without a count has none."""
    limits: dict[str, int] = {}
    for driver in helpers.spec(csi_node).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name", ""))] = int(count)
    return limits


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
