"""The volume binder: which claims a pod waits on, where they can be met, and making it so.

kube-scheduler's VolumeBinding plugin is a thin shell around this (``binder.go``):

- ``pod_volume_claims`` (PreFilter) sorts the pod's claims into bound ones, unbound ones
  whose class waits for the first consumer (the scheduler's to decide), and unbound ones
  that should already have been bound (Immediate, or pre-bound to a volume by name);
- ``find_pod_volumes`` (Filter) checks, for every candidate node at once, that the bound
  volumes' node affinity admits it and that every waiting claim either has an available
  volume there (the smallest that fits; a volume pre-bound to the claim first) or can be
  provisioned there (the class has a provisioner, its allowedTopologies admit the node and,
  if the CSI driver tracks capacity, a CSIStorageCapacity the node can reach has room);
- ``assume`` (Reserve) writes the decisions into the informers as the scheduler's own
  versions (a volume's claimRef, a claim's selected-node annotation), so the next cycles
  do not hand the same volume to another pod, and ``revert`` (Unreserve) takes them back;
- ``bind`` (PreBind) sends them to the API server and waits, polling every second, until
  the PV controller and the provisioner have bound every claim, or gives up with
  upstream's error so the pod is scheduled again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, KubeObject, Slots
from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.framework.labels import LabelSelector
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.storage import csitranslation
from secondary_scheduler.framework.storage import volumes as helpers
from secondary_scheduler.framework.storage.volumes import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    VolumeNodeAffinity,
)
from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable, resource_path

REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

_NO_CHOICE = -1
_MAX_INT64 = 2**63 - 1


class BinderError(Exception):
    """Something upstream reports as an Error status (not a rejection): the pod backs off and retries."""


@dataclass
class PodVolumeClaims:
    """A pod's claims, sorted as GetPodVolumeClaims sorts them (in the pod's volume order)."""

    bound: list[KubeObject] = field(default_factory=list)
    delayed: list[KubeObject] = field(default_factory=list)
    """Unbound claims of a WaitForFirstConsumer class: the scheduler picks their node."""
    immediate: list[KubeObject] = field(default_factory=list)
    """Unbound claims that should have been bound already (Immediate, or pre-bound by volumeName)."""
    volumes_by_class: dict[str, list[KubeObject]] = field(default_factory=dict)
    """Class -> the PVs of that class the delayed claims could take: the unbound ones, and those
    whose claimRef names one of the claims (volumes bound to other claims can never match)."""


@dataclass
class PodVolumes:
    """What binding the pod's volumes on one node takes (upstream's PodVolumes)."""

    static_bindings: list[tuple[KubeObject, KubeObject]] = field(default_factory=list)
    """(volume, claim): an existing volume to pre-bind to the claim."""
    dynamic_provisions: list[KubeObject] = field(default_factory=list)
    """Claims to provision on the node (their selected-node annotation triggers it)."""


@dataclass
class FoundVolumes:
    """``find_pod_volumes`` over many nodes: the reasons each one fails, and what fits where."""

    node_conflict: BoolArray
    bind_conflict: BoolArray
    not_enough_space: BoolArray
    pv_not_exist: BoolArray
    matched_claims: list[KubeObject]
    """The delayed claims looked up among existing volumes, in the order they were matched."""
    chosen: list[IntArray]
    """Per matched claim: the index into its class's volumes chosen on each node, or -1."""
    volumes: list[Sequence[KubeObject]]
    """Per matched claim: its class's volumes (what ``chosen`` indexes)."""
    selected_claims: list[KubeObject]
    """Delayed claims already annotated with this node: provisioned wherever the pod fits."""

    @property
    def feasible(self) -> BoolArray:
        return ~(self.node_conflict | self.bind_conflict | self.not_enough_space | self.pv_not_exist)

    def pod_volumes(self, position: int) -> PodVolumes:
        """The PodVolumes of the node at ``position`` among the candidates (a feasible one)."""
        result = PodVolumes(dynamic_provisions=list(self.selected_claims))
        for claim, chosen, volumes in zip(self.matched_claims, self.chosen, self.volumes, strict=True):
            index = int(chosen[position])
            if index == _NO_CHOICE:
                result.dynamic_provisions.append(claim)
            else:
                result.static_bindings.append((volumes[index], claim))
        return result


@dataclass
class Assumed:
    """What ``assume`` put into the informers, to be taken back by ``revert``."""

    volumes: list[tuple[KubeObject, KubeObject | None]] = field(default_factory=list)
    """(assumed volume, the version it replaced)."""
    claims: list[tuple[KubeObject, KubeObject | None]] = field(default_factory=list)


class VolumeBinder:
    def __init__(
        self,
        volumes: Informer,
        claims: Informer,
        classes: Informer,
        csi_nodes: Informer,
        csi_drivers: Informer,
        capacities: Informer,
        bind_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.volumes = volumes
        self.claims = claims
        self.classes = classes
        self.csi_nodes = csi_nodes
        self.csi_drivers = csi_drivers
        self.capacities = capacities
        self.bind_timeout = bind_timeout
        self.clock = clock
        self.poll_interval = 1.0
        """How often ``bind`` looks whether the claims are bound (upstream: every second)."""
        self._by_class = _VolumesByClass(volumes)

    # -- PreFilter --------------------------------------------------------------------------
    def pod_has_claims(self, pod: KubeObject) -> tuple[bool, str | None]:
        """Whether the pod uses claims, and why it cannot be scheduled at all (podHasPVCs)."""
        namespace = helpers.namespace_of(pod) or "default"
        claims = helpers.pod_claims(pod)
        for ref in claims:
            claim = self.claims.get(ref.name, namespace)
            if claim is None:
                if ref.ephemeral:
                    return True, (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{ref.name}"'
                    )
                return True, helpers.not_found(helpers.PVC_RESOURCE, ref.name)
            if (claim.get("status") or {}).get("phase") == helpers.CLAIM_LOST:
                volume_name = helpers.spec(claim).get("volumeName") or ""
                return True, (
                    f'persistentvolumeclaim "{helpers.name_of(claim)}" bound to non-existent '
                    f'persistentvolume "{volume_name}"'
                )
            if helpers.metadata(claim).get("deletionTimestamp") is not None:
                return True, f'persistentvolumeclaim "{helpers.name_of(claim)}" is being deleted'
            if ref.ephemeral:
                problem = helpers.volume_is_for_pod(pod, claim)
                if problem is not None:
                    return True, problem
        return bool(claims), None

    def pod_volume_claims(self, pod: KubeObject) -> PodVolumeClaims:
        """The pod's claims by binding state; BinderError when a claim or its class cannot be read."""
        namespace = helpers.namespace_of(pod) or "default"
        result = PodVolumeClaims()
        for ref in helpers.pod_claims(pod):
            claim = self.claims.get(ref.name, namespace)
            if claim is None:
                key = f"{namespace}/{ref.name}"
                raise BinderError(
                    f'error getting PVC "{key}": could not find v1.PersistentVolumeClaim "{key}"'
                )
            if ref.ephemeral:
                problem = helpers.volume_is_for_pod(pod, claim)
                if problem is not None:
                    raise BinderError(problem)
            if helpers.is_claim_fully_bound(claim):
                result.bound.append(claim)
                continue
            try:
                delayed = helpers.is_delay_binding_mode(claim, self.classes)
            except helpers.ClassError as error:
                raise BinderError(str(error)) from error
            if delayed and not helpers.spec(claim).get("volumeName"):
                result.delayed.append(claim)
            else:
                result.immediate.append(claim)
        wanted: dict[str, list[tuple[str, str]]] = {}
        for claim in result.delayed:
            refs = wanted.setdefault(helpers.claim_class(claim), [])
            refs.append((helpers.namespace_of(claim), helpers.name_of(claim)))
        for class_name, refs in wanted.items():
            result.volumes_by_class[class_name] = self._by_class.volumes(class_name, refs)
        return result

    # -- Filter -----------------------------------------------------------------------------
    def find_pod_volumes(
        self, pod: KubeObject, claims: PodVolumeClaims, table: NodeTable, slots: Slots
    ) -> FoundVolumes:
        """FindPodVolumes for every node in ``slots`` at once (BinderError for upstream's errors)."""
        count = len(slots)
        found = FoundVolumes(
            node_conflict=np.zeros(count, dtype=np.bool_),
            bind_conflict=np.zeros(count, dtype=np.bool_),
            not_enough_space=np.zeros(count, dtype=np.bool_),
            pv_not_exist=np.zeros(count, dtype=np.bool_),
            matched_claims=[],
            chosen=[],
            volumes=[],
            selected_claims=[],
        )
        csi_nodes = self._csi_nodes(table, slots) if count else []
        if claims.bound:
            self._check_bound_claims(claims.bound, table, slots, csi_nodes, found)
        if claims.delayed:
            self._check_delayed_claims(claims, table, slots, found)
        return found

    def _csi_nodes(self, table: NodeTable, slots: Slots) -> list[KubeObject | None]:
        return [self.csi_nodes.get(table.names[slot]) for slot in slots.tolist()]

    def volume_affinity_mask(
        self, volume: KubeObject, table: NodeTable, slots: Slots, csi_nodes: Sequence[KubeObject | None]
    ) -> BoolArray:
        """Whether each node is admitted by the volume's node affinity, as read on that node.

        On a node whose CSINode says the volume's in-tree plugin migrated, the volume is
        read as its CSI translation (tryTranslatePVToCSI): its zone requirement uses the CSI
        driver's topology key.
        """
        plain = VolumeNodeAffinity.of(volume).mask(table, slots)
        plugin = csitranslation.plugin_of_pv(volume)
        if plugin is None:
            return plain
        migrated = np.array(
            [csitranslation.migrated_on_node(plugin.name, csi_node) for csi_node in csi_nodes], dtype=np.bool_
        )
        if not migrated.any():
            return plain
        try:
            csitranslation.pv_volume_handle(plugin, volume)
        except csitranslation.TranslationError as error:
            raise BinderError(f"could not translate pv: {error}") from error
        translated = VolumeNodeAffinity.of(csitranslation.translate_pv_topology(volume)).mask(table, slots)
        return np.where(migrated, translated, plain)

    def _check_bound_claims(
        self,
        bound: Sequence[KubeObject],
        table: NodeTable,
        slots: Slots,
        csi_nodes: Sequence[KubeObject | None],
        found: FoundVolumes,
    ) -> None:
        """checkBoundClaims: a node stops at its first claim whose volume is missing or excludes it."""
        still = np.ones(len(slots), dtype=np.bool_)
        for claim in bound:
            volume = self.volumes.get(str(helpers.spec(claim).get("volumeName") or ""))
            if volume is None:
                found.pv_not_exist |= still
                return
            admitted = self.volume_affinity_mask(volume, table, slots, csi_nodes)
            found.node_conflict |= still & ~admitted
            still &= admitted

    def _check_delayed_claims(
        self, claims: PodVolumeClaims, table: NodeTable, slots: Slots, found: FoundVolumes
    ) -> None:
        count = len(slots)
        active = np.ones(count, dtype=np.bool_)
        to_match: list[KubeObject] = []
        for claim in claims.delayed:
            selected = helpers.annotations_of(claim).get(ANN_SELECTED_NODE)
            if selected is None:
                to_match.append(claim)
                continue
            # Fast path: a claim already meant for another node rules this one out.
            slot = table.slot_of(str(selected))
            active &= slots == (-1 if slot is None else slot)
            found.selected_claims.append(claim)
        found.bind_conflict |= ~active
        # Smallest requests first, so each takes the smallest volume that fits (byPVCSize).
        to_match.sort(key=lambda claim: helpers.requested_storage(claim) or 0)
        excluded: dict[str, BoolArray] = {}
        affinity: dict[str, BoolArray] = {}
        for claim in to_match:
            class_name = helpers.claim_class(claim)
            volumes = claims.volumes_by_class.get(class_name, [])
            taken = excluded.get(class_name)
            if taken is None:
                taken = excluded[class_name] = np.zeros((count, len(volumes)), dtype=np.bool_)
            chosen = self._match(claim, volumes, table, slots, active, taken, affinity)
            rows = np.flatnonzero(chosen != _NO_CHOICE)
            taken[rows, chosen[rows]] = True
            found.matched_claims.append(claim)
            found.chosen.append(chosen)
            found.volumes.append(volumes)
        # Claims that found no volume are provisioned, after the ones already meant for this node.
        provision = [(claim, active) for claim in found.selected_claims]
        provision += [
            (claim, active & (chosen == _NO_CHOICE))
            for claim, chosen in zip(found.matched_claims, found.chosen, strict=True)
        ]
        self._check_provisioning(provision, table, slots, found)

    def _match(
        self,
        claim: KubeObject,
        volumes: Sequence[KubeObject],
        table: NodeTable,
        slots: Slots,
        active: BoolArray,
        taken: BoolArray,
        affinity: dict[str, BoolArray],
    ) -> IntArray:
        """FindMatchingVolume on every node: the chosen volume's index per node, or -1.

        A volume pre-bound to the claim wins outright where its node affinity admits the
        node (and nothing is chosen where it does not); otherwise the smallest available
        volume of the claim's class that fits, offers its access modes, matches its
        selector and admits the node, the first one listed among equals.
        """
        count = len(slots)
        chosen = np.full(count, _NO_CHOICE, dtype=np.int64)
        if not volumes or not active.any():
            return chosen
        request = helpers.requested_storage(claim) or 0
        claim_spec = helpers.spec(claim)
        claim_class = helpers.claim_class(claim)
        claim_vac = claim_spec.get("volumeAttributesClassName") or ""
        raw_selector = claim_spec.get("selector")
        selector = LabelSelector.parse(raw_selector) if raw_selector is not None else None
        prebound = np.zeros(len(volumes), dtype=np.bool_)
        regular = np.zeros(len(volumes), dtype=np.bool_)
        capacities = np.zeros(len(volumes), dtype=np.int64)
        for index, volume in enumerate(volumes):
            volume_spec = helpers.spec(volume)
            bound_to_claim = volume_spec.get("claimRef") is not None
            if bound_to_claim and not helpers.is_volume_bound_to_claim(volume, claim):
                continue  # most volumes of a class: bound to other claims
            capacity = helpers.volume_capacity(volume)
            capacities[index] = min(capacity, _MAX_INT64)
            if (
                capacity < request
                or helpers.volume_mode_mismatch(claim, volume)
                or (volume_spec.get("volumeAttributesClassName") or "") != claim_vac
                or helpers.metadata(volume).get("deletionTimestamp") is not None
            ):
                continue
            if bound_to_claim:
                prebound[index] = True
                continue
            labels = helpers.metadata(volume).get("labels") or {}
            regular[index] = (
                (volume.get("status") or {}).get("phase") == helpers.VOLUME_AVAILABLE
                and (selector is None or selector.matches(labels))
                and helpers.volume_class(volume) == claim_class
                and helpers.check_access_modes(claim, volume)
            )
        candidates = np.flatnonzero(prebound | regular)
        if not len(candidates):
            return chosen
        admits = np.zeros((count, len(volumes)), dtype=np.bool_)
        csi_nodes: list[KubeObject | None] | None = None
        for index in candidates.tolist():
            volume = volumes[index]
            if csitranslation.plugin_of_pv(volume) is not None:
                csi_nodes = csi_nodes if csi_nodes is not None else self._csi_nodes(table, slots)
                admits[:, index] = self.volume_affinity_mask(volume, table, slots, csi_nodes)
                continue
            key = helpers.affinity_key(volume)
            mask = affinity.get(key)
            if mask is None:
                mask = affinity[key] = VolumeNodeAffinity.of(volume).mask(table, slots)
            admits[:, index] = mask
        open_prebound = prebound[np.newaxis, :] & ~taken
        has_prebound = open_prebound.any(axis=1)
        first_prebound = open_prebound.argmax(axis=1)
        rows = np.arange(count)
        prebound_choice = np.where(admits[rows, first_prebound], first_prebound, _NO_CHOICE)
        fitting = regular[np.newaxis, :] & ~taken & admits
        sizes = np.where(fitting, capacities[np.newaxis, :], _MAX_INT64)
        smallest = np.where(fitting.any(axis=1), sizes.argmin(axis=1), _NO_CHOICE)
        chosen[:] = np.where(has_prebound, prebound_choice, smallest)
        chosen[~active] = _NO_CHOICE
        return chosen

    def _check_provisioning(
        self,
        provision: Sequence[tuple[KubeObject, BoolArray]],
        table: NodeTable,
        slots: Slots,
        found: FoundVolumes,
    ) -> None:
        """checkVolumeProvisions: each node stops at its first claim that cannot be provisioned there."""
        decided = np.zeros(len(slots), dtype=np.bool_)
        for claim, needed in provision:
            applies = needed & ~decided
            if not applies.any():
                continue
            class_name = helpers.claim_class(claim)
            if not class_name:
                raise BinderError(
                    f'no class for claim "{helpers.namespace_of(claim)}/{helpers.name_of(claim)}"'
                )
            storage_class = self.classes.get(class_name)
            if storage_class is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            provisioner = str(storage_class.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                found.bind_conflict |= applies
                decided |= applies
                continue
            admitted = helpers.topology_terms_mask(storage_class.get("allowedTopologies"), table, slots)
            found.bind_conflict |= applies & ~admitted
            decided |= applies & ~admitted
            applies &= admitted
            room = self._capacity_mask(provisioner, claim, class_name, table, slots)
            if room is not None:
                found.not_enough_space |= applies & ~room
                decided |= applies & ~room

    def _capacity_mask(
        self, provisioner: str, claim: KubeObject, class_name: str, table: NodeTable, slots: Slots
    ) -> BoolArray | None:
        """hasEnoughCapacity: the nodes that reach a CSIStorageCapacity of the class with room.

        None when capacity is not checked: the claim requests no size, or the provisioner
        is not a CSI driver that opted into capacity tracking (``storageCapacity: true``).
        """
        size = helpers.requested_storage(claim)
        if size is None:
            return None
        driver = self.csi_drivers.get(provisioner)
        if driver is None or helpers.spec(driver).get("storageCapacity") is not True:
            return None
        room = np.zeros(len(slots), dtype=np.bool_)
        by_key: dict[str, set[str]] = {}
        for capacity in self.capacities:
            if capacity.get("storageClassName") != class_name or not _capacity_sufficient(capacity, size):
                continue
            topology = capacity.get("nodeTopology")
            simple = _single_label(topology)
            if simple is not None:
                by_key.setdefault(simple[0], set()).add(simple[1])
            else:
                room |= helpers.label_selector_mask(topology, table, slots)
        for key, values in by_key.items():
            room |= table.label_column(key).isin(slots, tuple(values))
        return room

    # -- Reserve / Unreserve ------------------------------------------------------------------
    def all_bound(self, pod: KubeObject) -> bool:
        """Every claim of the pod is fully bound (arePodVolumesBound)."""
        namespace = helpers.namespace_of(pod) or "default"
        for ref in helpers.pod_claims(pod):
            claim = self.claims.get(ref.name, namespace)
            if claim is None or not helpers.is_claim_fully_bound(claim):
                return False
            if ref.ephemeral and helpers.volume_is_for_pod(pod, claim) is not None:
                return False
        return True

    def assume(
        self, pod: KubeObject, node_name: str, volumes: PodVolumes
    ) -> tuple[bool, Assumed, PodVolumes]:
        """AssumePodVolumes: (all bound already, what was assumed, the volumes to write at PreBind)."""
        assumed = Assumed()
        if self.all_bound(pod):
            return True, assumed, PodVolumes()
        to_write = PodVolumes()
        for volume, claim in volumes.static_bindings:
            new_volume, dirty = helpers.bind_volume_to_claim(volume, claim)
            if dirty:
                assumed.volumes.append((new_volume, self.volumes.assume(new_volume)))
            to_write.static_bindings.append((new_volume, claim))
        for claim in volumes.dynamic_provisions:
            new_claim = helpers.with_selected_node(claim, node_name)
            assumed.claims.append((new_claim, self.claims.assume(new_claim)))
            to_write.dynamic_provisions.append(new_claim)
        return False, assumed, to_write

    def revert(self, assumed: Assumed) -> None:
        """Take the assumed versions back out of the informers (newer watch versions stay)."""
        for volume, previous in assumed.volumes:
            self.volumes.restore(volume, previous)
        for claim, previous in assumed.claims:
            self.claims.restore(claim, previous)

    # -- PreBind ------------------------------------------------------------------------------
    async def bind(
        self,
        client: ApiClient,
        pod: KubeObject,
        node_name: str,
        volumes: PodVolumes,
        assumed: Assumed,
        table: NodeTable,
        pod_key: str,
    ) -> str | None:
        """BindPodVolumes: write the bindings, then wait until bound. The error text, or None."""
        written = await self._write(client, volumes, assumed)
        if isinstance(written, str):
            return written
        deadline = self.clock() + self.bind_timeout
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0:
                return "binding volumes: context deadline exceeded"
            await asyncio.sleep(min(self.poll_interval, remaining))
            if self.clock() >= deadline:
                return "binding volumes: context deadline exceeded"
            try:
                if self._check_bindings(node_name, written, table, pod_key, helpers.name_of(pod)):
                    return None
            except BinderError as error:
                return f"binding volumes: {error}"

    async def _write(self, client: ApiClient, volumes: PodVolumes, assumed: Assumed) -> PodVolumes | str:
        """bindAPIUpdate: update each volume's claimRef, then each claim's annotation.

        On a failure, the assumed versions not yet written are taken back; the API's own
        message is the error, as client-go's error text is upstream's.
        """
        written = PodVolumes()
        done_volumes = 0
        done_claims = 0
        try:
            for volume, claim in volumes.static_bindings:
                body = {"apiVersion": "v1", "kind": "PersistentVolume", **volume}
                path = resource_path("v1", "persistentvolumes", None, helpers.name_of(volume))
                written.static_bindings.append((await client.replace(path, body), claim))
                done_volumes += 1
            for claim in volumes.dynamic_provisions:
                body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}
                path = resource_path(
                    "v1", "persistentvolumeclaims", helpers.namespace_of(claim), helpers.name_of(claim)
                )
                written.dynamic_provisions.append(await client.replace(path, body))
                done_claims += 1
        except (ApiError, ApiUnavailable) as error:
            self.revert(
                Assumed(
                    volumes=_unwritten(assumed.volumes, volumes.static_bindings[done_volumes:]),
                    claims=_unwritten(
                        assumed.claims, [(c, c) for c in volumes.dynamic_provisions[done_claims:]]
                    ),
                )
            )
            return error.message if isinstance(error, ApiError) else str(error)
        return written

    def _check_bindings(
        self, node_name: str, written: PodVolumes, table: NodeTable, pod_key: str, pod_name: str
    ) -> bool:
        """checkBindings: True once all claims are fully bound; BinderError when binding must be retried.

        It reads the informers, skipping a version older than the one written: the watch
        brings the API server's objects, shared with the PV controller and provisioners.
        """
        slot = table.slot_of(node_name)
        if slot is None:
            raise BinderError(f'failed to get node "{node_name}": node "{node_name}" not found')
        if table.node_of_pod(pod_key) is None:
            raise BinderError(f'pod does not exist any more: pod "{pod_name}" not found')
        slots = np.array([slot], dtype=np.intp)
        csi_nodes = [self.csi_nodes.get(node_name)]
        for volume, claim in written.static_bindings:
            current = self.volumes.get(helpers.name_of(volume))
            if current is None:
                raise BinderError(
                    f'failed to check binding: could not find v1.PersistentVolume "{helpers.name_of(volume)}"'
                )
            key = f"{helpers.namespace_of(claim)}/{helpers.name_of(claim)}"
            current_claim = self.claims.get(helpers.name_of(claim), helpers.namespace_of(claim))
            if current_claim is None:
                raise BinderError(f'failed to check binding: could not find v1.PersistentVolumeClaim "{key}"')
            if helpers.resource_version(volume) > helpers.resource_version(current):
                return False
            if not self.volume_affinity_mask(current, table, slots, csi_nodes)[0]:
                raise BinderError(
                    f'pv "{helpers.name_of(current)}" node affinity doesn\'t match node "{node_name}": '
                    "no matching NodeSelectorTerms"
                )
            ref = helpers.spec(current).get("claimRef")
            if ref is None or not ref.get("uid"):
                raise BinderError(f'ClaimRef got reset for pv "{helpers.name_of(current)}"')
            if not helpers.is_claim_fully_bound(current_claim):
                return False
        for claim in written.dynamic_provisions:
            name, namespace = helpers.name_of(claim), helpers.namespace_of(claim)
            current_claim = self.claims.get(name, namespace)
            if current_claim is None:
                raise BinderError(
                    "failed to check provisioning pvc: "
                    f'could not find v1.PersistentVolumeClaim "{namespace}/{name}"'
                )
            if helpers.resource_version(claim) > helpers.resource_version(current_claim):
                return False
            claim_annotations = helpers.metadata(current_claim).get("annotations")
            if claim_annotations is None:
                raise BinderError(f'selectedNode annotation reset for PVC "{name}"')
            if claim_annotations.get(ANN_SELECTED_NODE) != node_name:
                raise BinderError(f'provisioning failed for PVC "{name}"')
            volume_name = helpers.spec(current_claim).get("volumeName")
            if volume_name:
                current = self.volumes.get(str(volume_name))
                if current is None:
                    return False  # the PV may not have reached the informer yet
                if not self.volume_affinity_mask(current, table, slots, csi_nodes)[0]:
                    raise BinderError(
                        f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not helpers.is_claim_fully_bound(current_claim):
                return False
        return True


class _VolumesByClass:
    """The PV names of each class, unbound or by the claim they name (the assume cache's index).

    Kept from the informer's changes. Only names are indexed: a volume is read from the
    informer when listed, so a version the scheduler assumed (pre-bound to a claim) is what
    the next cycle sees and skips.
    """

    def __init__(self, volumes: Informer) -> None:
        self._volumes = volumes
        self._unbound: dict[str, dict[str, None]] = {}
        """Class -> names of its volumes without a claimRef, in the order they appeared."""
        self._claimed: dict[tuple[str, str, str], dict[str, None]] = {}
        """(class, claim namespace, claim name) -> names of its volumes whose claimRef names that claim."""
        self._key_of: dict[str, tuple[str, str, str] | str] = {}
        for volume in volumes:
            self._add(volume)
        volumes.add_listener(self._changed)

    def volumes(self, class_name: str, claims: Sequence[tuple[str, str]]) -> list[KubeObject]:
        """The class's unbound volumes, then those pre-bound to any of ``claims`` (namespace, name)."""
        names = dict(self._unbound.get(class_name, {}))
        for namespace, name in claims:
            names.update(self._claimed.get((class_name, namespace, name), {}))
        found = (self._volumes.get(name) for name in names)
        return [volume for volume in found if volume is not None]

    @staticmethod
    def _key(volume: KubeObject) -> tuple[str, str, str] | str:
        class_name = helpers.volume_class(volume)
        ref = helpers.spec(volume).get("claimRef")
        if ref is None:
            return class_name
        return class_name, str(ref.get("namespace") or ""), str(ref.get("name") or "")

    def _add(self, volume: KubeObject) -> None:
        name, key = helpers.name_of(volume), self._key(volume)
        if self._key_of.get(name) == key:
            return
        self._remove(name)
        self._key_of[name] = key
        group = (
            self._unbound.setdefault(key, {}) if isinstance(key, str) else self._claimed.setdefault(key, {})
        )
        group[name] = None

    def _remove(self, name: str) -> None:
        key = self._key_of.pop(name, None)
        if key is None:
            return
        groups: dict[Any, dict[str, None]] = self._unbound if isinstance(key, str) else self._claimed
        group = groups[key]
        group.pop(name, None)
        if not group:
            del groups[key]

    def _changed(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if new is not None:
            self._add(new)
        elif old is not None:
            self._remove(helpers.name_of(old))


def _unwritten(
    assumed: Sequence[tuple[KubeObject, KubeObject | None]], pending: Sequence[tuple[KubeObject, Any]]
) -> list[tuple[KubeObject, KubeObject | None]]:
    """The assumed entries whose object is among the ``pending`` (not yet written) ones."""
    pending_ids = {id(item[0]) for item in pending}
    return [entry for entry in assumed if id(entry[0]) in pending_ids]


def _capacity_sufficient(capacity: Mapping[str, Any], size: int) -> bool:
    """maximumVolumeSize if given (it is more precise), else capacity, at least ``size``."""
    limit = capacity.get("maximumVolumeSize")
    if limit is None:
        limit = capacity.get("capacity")
    if limit is None:
        return False
    return helpers.quantity_value(limit) >= size


def _single_label(topology: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(key, value) when a nodeTopology is exactly one ``matchLabels`` pair (the per-node pools' shape)."""
    if topology is None or topology.get("matchExpressions"):
        return None
    labels = topology.get("matchLabels") or {}
    if len(labels) != 1:
        return None
    ((key, value),) = labels.items()
    return str(key), str(value)
