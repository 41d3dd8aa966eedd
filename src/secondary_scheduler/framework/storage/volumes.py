"""What the volume plugins share about claims, volumes and classes (component-helpers' storage/volume).

Every volume plugin needs the same few facts: which claims a pod uses (a
``persistentVolumeClaim`` volume, or a generic ephemeral volume whose claim is named
``<pod>-<volume>``), a claim's or volume's class (the beta annotation wins over the field,
as upstream reads it), whether a class delays binding, and whether a volume's node affinity
admits a node. They live here once, written after kube-scheduler 1.34's helpers
(``k8s.io/component-helpers/storage/volume``, ``.../storage/ephemeral``), with upstream's
error texts, so the four plugins reject a pod with the same words kube-scheduler uses.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, KubeObject, Slots
from secondary_scheduler.framework.nodeselector import (
    NODE_NAME_FIELD,
    LabelRequirement,
    NodeSelector,
    NodeSelectorTerm,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.kube.quantity import QuantityError, int_value

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
"""Set on a claim by the scheduler: provision it for this node (the provisioner's cue)."""
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
"""Set on a claim by the PV controller once its binding is complete."""
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
FILESYSTEM = "Filesystem"
CLAIM_LOST = "Lost"
VOLUME_AVAILABLE = "Available"

PVC_RESOURCE = "persistentvolumeclaim"
PV_RESOURCE = "persistentvolume"
STORAGE_CLASS_RESOURCE = "storageclass.storage.k8s.io"


def not_found(resource: str, name: str) -> str:
    """An informer's NotFound error text, as a lister's: ``persistentvolumeclaim "x" not found``."""
    return f'{resource} "{name}" not found'


def metadata(obj: KubeObject | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def spec(obj: KubeObject | None) -> Mapping[str, Any]:
    return (obj or {}).get("spec") or {}


def annotations_of(obj: KubeObject | None) -> Mapping[str, str]:
    return metadata(obj).get("annotations") or {}


def name_of(obj: KubeObject | None) -> str:
    return str(metadata(obj).get("name", ""))


def namespace_of(obj: KubeObject | None) -> str:
    return str(metadata(obj).get("namespace") or "")


def resource_version(obj: KubeObject | None) -> int:
    """``metadata.resourceVersion`` as the number the API server made it (0 when absent or odd)."""
    text = str(metadata(obj).get("resourceVersion") or "0")
    return int(text) if text.isdigit() else 0


# -- the claims a pod uses ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A claim a pod's volume refers to: by name, or generated for a generic ephemeral volume."""

    name: str
    volume: str
    """The pod's volume name."""
    ephemeral: bool


def pod_volumes(pod: KubeObject) -> Sequence[Mapping[str, Any]]:
    return spec(pod).get("volumes") or ()


def pod_claims(pod: KubeObject) -> list[PodClaim]:
    """The claims of a pod's volumes, in volume order (ephemeral.VolumeClaimName for ephemeral ones)."""
    pod_name = name_of(pod)
    claims = []
    for volume in pod_volumes(pod):
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            claims.append(PodClaim(str(source.get("claimName") or ""), str(volume.get("name", "")), False))
        elif volume.get("ephemeral") is not None:
            claims.append(PodClaim(f"{pod_name}-{volume.get('name', '')}", str(volume.get("name", "")), True))
    return claims


def pvc_claim_names(pod: KubeObject) -> list[str]:
    """The claim names of a pod's ``persistentVolumeClaim`` volumes only (what VolumeZone and
    VolumeRestrictions read; ephemeral volumes are not theirs)."""
    return [
        str((volume.get("persistentVolumeClaim") or {}).get("claimName") or "")
        for volume in pod_volumes(pod)
        if volume.get("persistentVolumeClaim") is not None
    ]


def volume_is_for_pod(pod: KubeObject, claim: KubeObject) -> str | None:
    """Why an ephemeral volume's claim is not the pod's own (ephemeral.VolumeIsForPod), or None."""
    pod_uid = metadata(pod).get("uid")
    owners = metadata(claim).get("ownerReferences") or ()
    controlled = any(owner.get("controller") and owner.get("uid") == pod_uid for owner in owners)
    if namespace_of(claim) != namespace_of(pod) or not controlled:
        return (
            f"PVC {namespace_of(claim)}/{name_of(claim)} was not created for pod "
            f"{namespace_of(pod)}/{name_of(pod)} (pod is not owner)"
        )
    return None


# -- claims, volumes and classes ---------------------------------------------------------


def claim_class(claim: KubeObject) -> str:
    """The claim's StorageClass name, "" for none (GetPersistentVolumeClaimClass)."""
    beta = annotations_of(claim).get(BETA_STORAGE_CLASS_ANNOTATION)
    if beta is not None:
        return str(beta)
    value = spec(claim).get("storageClassName")
    return str(value) if value is not None else ""


def volume_class(volume: KubeObject) -> str:
    """The volume's StorageClass name (GetPersistentVolumeClass)."""
    beta = annotations_of(volume).get(BETA_STORAGE_CLASS_ANNOTATION)
    if beta is not None:
        return str(beta)
    return str(spec(volume).get("storageClassName") or "")


def quantity_value(value: object) -> int:
    """A quantity's Value() (whole units, rounded up); 0 for a missing or malformed one."""
    if value is None:
        return 0
    return _quantity_value(value if isinstance(value, str | int | float) else str(value))


@functools.lru_cache(maxsize=4096)
def _quantity_value(value: str | int | float) -> int:
    """Parsed once per distinct text: a class's volumes and capacities repeat the same few sizes."""
    try:
        return int_value(value)
    except QuantityError:
        return 0


def requested_storage(claim: KubeObject) -> int | None:
    """``resources.requests.storage`` in bytes (Quantity.Value, rounded up); None when not requested."""
    requests = (spec(claim).get("resources") or {}).get("requests") or {}
    value = requests.get("storage")
    return None if value is None else quantity_value(value)


def volume_capacity(volume: KubeObject) -> int:
    return quantity_value((spec(volume).get("capacity") or {}).get("storage"))


def is_claim_fully_bound(claim: KubeObject) -> bool:
    """Bound to a volume and the PV controller has finished (isPVCFullyBound)."""
    return bool(spec(claim).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(claim)


def is_volume_bound_to_claim(volume: KubeObject, claim: KubeObject) -> bool:
    """The volume's claimRef names this claim (and its UID, when the ref has one)."""
    ref = spec(volume).get("claimRef")
    if ref is None:
        return False
    if ref.get("name") != name_of(claim) or (ref.get("namespace") or "") != namespace_of(claim):
        return False
    uid = ref.get("uid") or ""
    return not uid or uid == metadata(claim).get("uid")


def check_access_modes(claim: KubeObject, volume: KubeObject) -> bool:
    """The volume offers every access mode the claim asks for."""
    offered = set(spec(volume).get("accessModes") or ())
    return all(mode in offered for mode in spec(claim).get("accessModes") or ())


def volume_mode_mismatch(claim: KubeObject, volume: KubeObject) -> bool:
    """Block against Filesystem (unset means Filesystem on both sides)."""
    return (spec(claim).get("volumeMode") or FILESYSTEM) != (spec(volume).get("volumeMode") or FILESYSTEM)


def claim_reference(claim: KubeObject) -> dict[str, Any]:
    """The ObjectReference a volume's claimRef holds (reference.GetReference of the claim)."""
    meta = metadata(claim)
    ref: dict[str, Any] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1"}
    for key in ("namespace", "name", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


def bind_volume_to_claim(volume: KubeObject, claim: KubeObject) -> tuple[dict[str, Any], bool]:
    """The volume pre-bound to the claim, and whether anything changed (GetBindVolumeToClaim)."""
    bound_before = is_volume_bound_to_claim(volume, claim)
    clone: dict[str, Any] = copy.deepcopy(dict(volume))
    dirty = False
    ref = spec(volume).get("claimRef")
    if (
        ref is None
        or ref.get("name") != name_of(claim)
        or (ref.get("namespace") or "") != namespace_of(claim)
        or (ref.get("uid") or "") != (metadata(claim).get("uid") or "")
    ):
        clone.setdefault("spec", {})["claimRef"] = claim_reference(claim)
        dirty = True
    clone_annotations = clone.setdefault("metadata", {}).setdefault("annotations", {}) or {}
    if not bound_before and ANN_BOUND_BY_CONTROLLER not in clone_annotations:
        clone_annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        clone["metadata"]["annotations"] = clone_annotations
        dirty = True
    return clone, dirty


def with_selected_node(claim: KubeObject, node_name: str) -> dict[str, Any]:
    """A copy of the claim annotated for provisioning on ``node_name`` (never the informer's object)."""
    clone: dict[str, Any] = copy.deepcopy(dict(claim))
    meta = clone.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node_name}
    return clone


class ClassError(Exception):
    """A StorageClass that cannot be read as upstream would (e.g. no volumeBindingMode)."""


def is_delay_binding_mode(claim: KubeObject, classes: Any) -> bool:
    """Whether the claim's class binds on first consumer (IsDelayBindingMode).

    No class, or a class that does not exist, means Immediate. ``classes`` is the
    StorageClass informer (anything with ``get(name)``).
    """
    class_name = claim_class(claim)
    if not class_name:
        return False
    storage_class = classes.get(class_name)
    if storage_class is None:
        return False
    mode = storage_class.get("volumeBindingMode")
    if mode is None:
        raise ClassError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
    return bool(mode == WAIT_FOR_FIRST_CONSUMER)


# -- node constraints of volumes and classes -----------------------------------------------


def _label_selector_term(term: NodeSelectorTerm) -> NodeSelectorTerm | None:
    """The term as upstream checks volume node affinity: against a node that has labels only.

    CheckNodeAffinity matches the PV's terms against ``Node{Labels: node.Labels}``: the
    node's name is empty there, so ``metadata.name In [x]`` never matches and ``NotIn [x]``
    always does. Returns None when the term can match no node.
    """
    for field in term.fields:
        if field.key != NODE_NAME_FIELD:
            continue
        if (field.operator == "In") != (field.value == ""):
            return None
    kept = tuple(field for field in term.fields if field.key != NODE_NAME_FIELD)
    return NodeSelectorTerm(term.expressions, kept)


@dataclass(frozen=True, slots=True)
class VolumeNodeAffinity:
    """A volume's ``spec.nodeAffinity.required``, evaluated over many nodes at once."""

    selector: NodeSelector | None
    """None: the volume has no required node affinity and fits every node."""

    @classmethod
    def of(cls, volume: KubeObject) -> VolumeNodeAffinity:
        required = (spec(volume).get("nodeAffinity") or {}).get("required")
        if required is None:
            return cls(None)
        parsed = NodeSelector.parse(required)
        terms = (_label_selector_term(term) for term in parsed.terms)
        return cls(NodeSelector(tuple(term for term in terms if term is not None)))

    def mask(self, table: NodeTable, slots: Slots) -> BoolArray:
        if self.selector is None:
            return np.ones(len(slots), dtype=np.bool_)
        return self.selector.mask(table, slots)


def affinity_key(volume: KubeObject) -> str:
    """Equal for volumes with equal node affinity, so each distinct one is evaluated once a cycle."""
    return repr((spec(volume).get("nodeAffinity") or {}).get("required"))


def topology_terms_mask(
    terms: Sequence[Mapping[str, Any]] | None, table: NodeTable, slots: Slots
) -> BoolArray:
    """Nodes admitted by a class's ``allowedTopologies`` (MatchTopologySelectorTerms): no terms admit all."""
    if not terms:
        return np.ones(len(slots), dtype=np.bool_)
    result = np.zeros(len(slots), dtype=np.bool_)
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if not expressions:
            continue  # an empty term selects nothing
        requirements = [
            LabelRequirement(str(item.get("key", "")), "In", tuple(str(v) for v in item.get("values") or ()))
            for item in expressions
        ]
        if any(not requirement.values for requirement in requirements):
            continue  # In without values does not parse: the term is skipped
        matched = np.ones(len(slots), dtype=np.bool_)
        for requirement in requirements:
            matched &= requirement.mask(table, slots)
        result |= matched
    return result


def label_selector_mask(raw: Mapping[str, Any] | None, table: NodeTable, slots: Slots) -> BoolArray:
    """Nodes whose labels a ``metav1.LabelSelector`` selects (nil selects none, ``{}`` all).

    An invalid selector selects no node, as LabelSelectorAsSelector's error does for
    CSIStorageCapacity's nodeTopology.
    """
    if raw is None:
        return np.zeros(len(slots), dtype=np.bool_)
    requirements: list[LabelRequirement] = [
        LabelRequirement(str(key), "In", (str(value),))
        for key, value in (raw.get("matchLabels") or {}).items()
    ]
    for item in raw.get("matchExpressions") or ():
        operator = str(item.get("operator", ""))
        values = tuple(str(value) for value in item.get("values") or ())
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return np.zeros(len(slots), dtype=np.bool_)
        if (operator in ("In", "NotIn")) != bool(values):
            return np.zeros(len(slots), dtype=np.bool_)
        requirements.append(LabelRequirement(str(item.get("key", "")), operator, values))
    result = np.ones(len(slots), dtype=np.bool_)
    for requirement in requirements:
        result &= requirement.mask(table, slots)
    return result
