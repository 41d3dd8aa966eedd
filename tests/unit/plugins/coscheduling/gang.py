"""Objects for the Coscheduling unit tests: PodGroups, gang pods, a plugin on an in-memory handle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.unit.framework.kubeobjects import make_pod

from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.coscheduling.plugin import Coscheduling
from secondary_scheduler.plugins.coscheduling.podgroup import POD_GROUP_LABEL, PODGROUPS

JSON = dict[str, Any]
NAMESPACE = "ns"


def podgroup(
    name: str,
    min_member: int,
    *,
    created: str = "2025-01-01T00:00:00Z",
    min_resources: Mapping[str, str] | None = None,
    timeout: int | None = None,
    status: JSON | None = None,
) -> JSON:
    spec: JSON = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    obj: JSON = {
        "apiVersion": PODGROUPS.api_version,
        "kind": PODGROUPS.kind,
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "creationTimestamp": created,
            "resourceVersion": "1",
        },
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def member(name: str, group: str | None, *, cpu: str = "1", node: str | None = None, **spec: Any) -> JSON:
    labels = {POD_GROUP_LABEL: group} if group else {}
    return make_pod(name, namespace=NAMESPACE, labels=labels, requests={"cpu": cpu}, node_name=node, **spec)


@dataclass
class Clocks:
    """A monotonic and a wall clock the test moves by hand."""

    mono: float = 100.0
    wall: float = 1_800_000_000.0

    def tick(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += seconds


def plugin_with(
    podgroups: list[JSON],
    pods: list[JSON],
    args: Mapping[str, Any] | None = None,
    clocks: Clocks | None = None,
) -> tuple[Coscheduling, list[list[PodInfo]]]:
    """The plugin on a fresh handle with the PodGroups and pods filled, and the activations it asks for."""
    clocks = clocks or Clocks()
    activated: list[list[PodInfo]] = []
    handle = Handle(clock=lambda: clocks.mono, wall_clock=lambda: clocks.wall, activator=activated.append)
    handle.informer(PODGROUPS).replace(podgroups)
    plugin = Coscheduling.build(dict(args or {}), handle)
    plugin.manager.replace(pods)
    return plugin, activated
