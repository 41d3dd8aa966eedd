"""PodGroups (``scheduling.x-k8s.io/v1alpha1``) as the Coscheduling plugin reads them.

A PodGroup names a gang: pods join it with the label ``scheduling.x-k8s.io/pod-group:
<name>`` in the group's namespace. Its spec says how many must be placed together
(``minMember``), optionally the resources the whole gang needs (``minResources``) and how
long placed members wait for the others (``scheduleTimeoutSeconds``). The API server
validates the object against the CRD (``deploy/crds``); what is read here is only what
the schema guarantees, so a value it lets through (a quantity string) is parsed here.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.framework.informers import Resource
from secondary_scheduler.kube.quantity import QuantityError, resource_value

GROUP = "scheduling.x-k8s.io"
POD_GROUP_LABEL = f"{GROUP}/pod-group"
"""The label a pod names its PodGroup with (upstream's v1alpha1.PodGroupLabel)."""
PODGROUPS = Resource(f"{GROUP}/v1alpha1", "PodGroup", "podgroups", namespaced=True)

# Phases (apis/scheduling/v1alpha1): what the status controller writes.
PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"


def group_label(labels: Mapping[str, str]) -> str:
    """The pod's PodGroup name ("" when it belongs to none)."""
    return labels.get(POD_GROUP_LABEL, "")


def full_name(namespace: str, group: str) -> str:
    """``namespace/group``, the key every per-group record is kept under ("" without a group)."""
    return f"{namespace}/{group}" if group else ""


def parse_time(raw: object) -> float | None:
    """An RFC 3339 timestamp (``metadata.creationTimestamp``) as Unix seconds; None if absent or bad."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class PodGroup:
    """The parts of a PodGroup the plugin decides by."""

    namespace: str
    name: str
    min_member: int
    min_resources: Mapping[str, int] | None
    """Resource -> amount (cpu in millicores, the rest in whole units); None when unset."""
    schedule_timeout_seconds: int | None
    created: float | None
    """``metadata.creationTimestamp`` in Unix seconds."""

    @property
    def full_name(self) -> str:
        return full_name(self.namespace, self.name)

    @classmethod
    def from_object(cls, obj: KubeObject) -> PodGroup:
        """Parse a PodGroup; a minResources value that is not a quantity raises ValueError naming it."""
        metadata: Mapping[str, Any] = obj.get("metadata") or {}
        spec: Mapping[str, Any] = obj.get("spec") or {}
        namespace, name = str(metadata.get("namespace", "")), str(metadata.get("name", ""))
        raw_resources = spec.get("minResources")
        resources: dict[str, int] | None = None
        if raw_resources is not None:
            resources = {}
            for resource, quantity in dict(raw_resources).items():
                try:
                    resources[str(resource)] = resource_value(str(resource), quantity)
                except QuantityError as error:
                    raise ValueError(
                        f"PodGroup {namespace}/{name}: spec.minResources.{resource}: {error}"
                    ) from error
        timeout = spec.get("scheduleTimeoutSeconds")
        return cls(
            namespace=namespace,
            name=name,
            min_member=int(spec.get("minMember") or 0),
            min_resources=resources,
            schedule_timeout_seconds=int(timeout) if timeout is not None else None,
            created=parse_time(metadata.get("creationTimestamp")),
        )
