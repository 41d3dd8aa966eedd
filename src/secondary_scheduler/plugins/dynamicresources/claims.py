"""A pod's ResourceClaims as kube-scheduler 1.34 finds them, and the devices claims hold.

``spec.resourceClaims[]`` names a claim directly (``resourceClaimName``) or through a template
(``resourceClaimTemplateName``): the controller manager then creates a claim owned by the pod
and records its name in ``status.resourceClaimStatuses`` (``k8s.io/dynamic-resource-allocation/
resourceclaim.Name``). Errors read as upstream's (they end up in FailedScheduling events).
Templates themselves are not read: upstream's scheduler does not watch them (its
system:kube-scheduler role has no rule for them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.framework.informers import Informer, Resource
from secondary_scheduler.plugins.dynamicresources.allocator import DeviceID, allocated_device_ids

RESOURCE_CLAIMS = Resource("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", namespaced=True)
DEVICE_CLASSES = Resource("resource.k8s.io/v1", "DeviceClass", "deviceclasses", namespaced=False)
RESOURCE_SLICES = Resource("resource.k8s.io/v1", "ResourceSlice", "resourceslices", namespaced=False)

RESERVED_FOR_MAX_SIZE = 256
"""resourceapi.ResourceClaimReservedForMaxSize: consumers one claim may have."""

FINALIZER = "resource.kubernetes.io/delete-protection"
"""resourceapi.Finalizer: the scheduler adds it with the allocation."""


class ClaimLookupError(Exception):
    """A claim of the pod that is missing, being deleted or not the pod's own."""


def metadata(obj: KubeObject) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def claim_key(claim: KubeObject) -> str:
    return f"{metadata(claim).get('namespace', '')}/{metadata(claim).get('name', '')}"


def allocation_of(claim: KubeObject) -> Mapping[str, Any] | None:
    allocation = (claim.get("status") or {}).get("allocation")
    return allocation if allocation else None


def reserved_for(claim: KubeObject) -> list[Mapping[str, Any]]:
    return list((claim.get("status") or {}).get("reservedFor") or ())


def is_reserved_for(claim: KubeObject, pod_uid: str) -> bool:
    return any(consumer.get("uid") == pod_uid for consumer in reserved_for(claim))


def claim_name(pod: KubeObject, entry: Mapping[str, Any]) -> tuple[str | None, bool]:
    """(the claim's name or None when none was generated on purpose, whether the pod must own it)."""
    pod_meta = metadata(pod)
    where = f'pod "{pod_meta.get("namespace", "")}/{pod_meta.get("name", "")}"'
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"]), False
    if entry.get("resourceClaimTemplateName"):
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
            if status.get("name") == entry.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True
        raise ClaimLookupError(f"{where}: ResourceClaim not created yet")
    raise ClaimLookupError(
        f'{where}, spec.resourceClaim "{entry.get("name", "")}": none of the supported fields are set'
    )


def pod_claims(pod: KubeObject, claims: Informer) -> list[KubeObject]:
    """The pod's claims, in ``spec.resourceClaims`` order (upstream's foreachPodResourceClaim)."""
    pod_meta = metadata(pod)
    namespace = str(pod_meta.get("namespace") or "default")
    found = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        name, must_own = claim_name(pod, entry)
        if name is None:
            continue
        claim = claims.get(name, namespace)
        if claim is None:
            raise ClaimLookupError(f'could not find ResourceClaim "{namespace}/{name}"')  # the assume cache's
        if metadata(claim).get("deletionTimestamp"):
            raise ClaimLookupError(f'resourceclaim "{name}" is being deleted')
        if must_own and not _controlled_by(claim, str(pod_meta.get("uid", ""))):
            raise ClaimLookupError(
                f"ResourceClaim {namespace}/{name} was not created for pod "
                f"{namespace}/{pod_meta.get('name', '')} (pod is not owner)"
            )
        found.append(claim)
    return found


def _controlled_by(claim: KubeObject, uid: str) -> bool:
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in metadata(claim).get("ownerReferences") or ()
    )


class HeldDevices:
    """Every device an allocated claim holds (upstream's ListAllAllocatedDevices), read again
    each cycle only for the claims that changed.

    The informer holds a new object for a changed (or assumed) claim, so a claim's devices are
    kept with the object they were read from and reused while that object is still the one
    listed; claims no longer listed are forgotten.
    """

    def __init__(self) -> None:
        self._by_object: dict[int, tuple[KubeObject, list[DeviceID]]] = {}

    def of(self, claims: Iterable[KubeObject]) -> set[DeviceID]:
        devices: set[DeviceID] = set()
        kept: dict[int, tuple[KubeObject, list[DeviceID]]] = {}
        previous = self._by_object
        for claim in claims:
            entry = previous.get(id(claim))
            if entry is None or entry[0] is not claim:
                entry = (claim, allocated_device_ids(claim))  # none without an allocation
            kept[id(claim)] = entry
            devices.update(entry[1])
        self._by_object = kept
        return devices
