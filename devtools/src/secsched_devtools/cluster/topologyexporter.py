"""The local cluster's NUMA topology exporter: a NodeResourceTopology per KWOK node.

On a real cluster a daemon on each node (resource-topology-exporter, NFD's topology
updater) asks the kubelet which CPUs, memory and devices each NUMA zone has and which the
admitted pods took, and publishes that as a NodeResourceTopology named after the node.
KWOK nodes have no kubelet, so this process plays both parts for them:

- each node gets ``secsched.io/numa-zones`` zones (2 unless the label says 4, or 1..8),
  named node-0..node-N-1, its capacity and allocatable cpu and memory split evenly (the
  remainder to the lowest zones), distances 10 to itself and 20 to the others;
- the Topology Manager's policy and scope are published as attributes
  (single-numa-node/container unless the labels ``secsched.io/topology-manager-policy``
  and ``-scope`` say otherwise);
- pods bound to the node are admitted in a fixed order (when they were first seen, then
  creation time, namespace and name) and keep the zone they got: a Guaranteed pod's
  exclusive resources (whole cpus, memory, hugepages) and any pod's devices are taken
  from one zone per container (scope container) or per pod (scope pod), the lowest zone
  that has room for all of them, as the kubelet picks; a pod no zone can take is logged
  as the TopologyAffinityError a kubelet would give it, and takes nothing;
- ``available`` is allocatable minus what admitted pods took, and the pod-set fingerprint
  (``nodeTopologyPodsFingerprint``) signs the pods the node runs, so the scheduler's
  overreserve cache can tell when the object caught up with its bindings.

Objects are owned by their Node (deleted with it) and rewritten only when they change.
Run as `python -m secsched_devtools.cluster.topologyexporter --kubeconfig K`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from secondary_scheduler.kube.client import JSON, ApiClient
from secondary_scheduler.kube.quantity import QuantityError, parse_quantity
from secondary_scheduler.plugins.noderesourcetopology import fingerprint
from secondary_scheduler.plugins.noderesourcetopology.podresources import (
    is_exclusive,
    pod_resources,
)
from secsched_devtools.cluster.controllerproc import controller_main
from secsched_devtools.cluster.nodes import NUMA_ZONES_LABEL
from secsched_devtools.cluster.watchloop import WatchLoop

log = logging.getLogger("topology-exporter")

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
ZONES_LABEL = NUMA_ZONES_LABEL
POLICY_LABEL = "secsched.io/topology-manager-policy"
SCOPE_LABEL = "secsched.io/topology-manager-scope"
DEFAULT_ZONES = 2
DEFAULT_POLICY = "single-numa-node"
DEFAULT_SCOPE = "container"
POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
SCOPES = ("container", "pod")
MANAGER = "secsched-topology-exporter"
MANAGED_BY = "app.kubernetes.io/managed-by"
API_VERSION = "topology.node.k8s.io/v1alpha2"
NRTS = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
SPLIT_RESOURCES = ("cpu", "memory")
TERMINAL = ("Succeeded", "Failed")


class ShapeError(ValueError):
    """A node label that asks for a topology this exporter cannot publish."""


@dataclass(frozen=True)
class NodeTopologyShape:
    zones: int
    policy: str
    scope: str


def node_shape(node: Mapping[str, Any]) -> NodeTopologyShape:
    """The node's NUMA layout and Topology Manager settings, from its labels."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    raw = labels.get(ZONES_LABEL, str(DEFAULT_ZONES))
    if not str(raw).isdigit() or not 1 <= int(raw) <= 8:
        raise ShapeError(f"label {ZONES_LABEL}={raw!r}: use a number of NUMA zones from 1 to 8 (e.g. 2 or 4)")
    policy = labels.get(POLICY_LABEL, DEFAULT_POLICY)
    if policy not in POLICIES:
        raise ShapeError(f"label {POLICY_LABEL}={policy!r}: use one of {', '.join(POLICIES)}")
    scope = labels.get(SCOPE_LABEL, DEFAULT_SCOPE)
    if scope not in SCOPES:
        raise ShapeError(f"label {SCOPE_LABEL}={scope!r}: use one of {', '.join(SCOPES)}")
    return NodeTopologyShape(int(raw), policy, scope)


def _quantity(raw: object) -> Decimal:
    try:
        return parse_quantity(raw)  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return Decimal(0)


def split(total: Decimal, zones: int, unit: Decimal) -> list[Decimal]:
    """``total`` in ``zones`` equal parts of whole ``unit``s, the remainder to the lowest zones."""
    units = int(total / unit)
    share, remainder = divmod(units, zones)
    return [(share + (1 if index < remainder else 0)) * unit for index in range(zones)]


def _unit(resource: str) -> Decimal:
    return Decimal("0.001") if resource == "cpu" else Decimal(1)


def format_quantity(resource: str, amount: Decimal) -> str:
    if resource == "cpu":
        millis = int(amount * 1000)
        return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
    return str(int(amount))


@dataclass
class Zone:
    capacity: dict[str, Decimal]
    allocatable: dict[str, Decimal]
    taken: dict[str, Decimal] = field(default_factory=dict)

    def available(self, resource: str) -> Decimal:
        return self.allocatable.get(resource, Decimal(0)) - self.taken.get(resource, Decimal(0))


def empty_zones(node: Mapping[str, Any], count: int) -> list[Zone]:
    status = node.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}
    resources = [name for name in capacity if name in SPLIT_RESOURCES or str(name).startswith("hugepages-")]
    zones = [Zone({}, {}) for _ in range(count)]
    for resource in resources:
        unit = _unit(resource)
        for index, amount in enumerate(split(_quantity(capacity.get(resource)), count, unit)):
            zones[index].capacity[resource] = amount
        for index, amount in enumerate(split(_quantity(allocatable.get(resource)), count, unit)):
            zones[index].allocatable[resource] = amount
    return zones


def exclusive_requests(qos: str, requests: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """What the kubelet's resource managers pin to a zone: whole cpus, memory, hugepages, devices."""
    return {name: q for name, q in requests.items() if q > 0 and is_exclusive(qos, name, q)}


def choose_zone(zones: list[Zone], wanted: Mapping[str, Decimal]) -> int | None:
    """The lowest zone that has room for all of ``wanted`` (resources no zone has are not NUMA-bound)."""
    bound = {name: q for name, q in wanted.items() if any(name in zone.allocatable for zone in zones)}
    for index, zone in enumerate(zones):
        if all(zone.available(name) >= quantity for name, quantity in bound.items()):
            return index
    return None


def admit(
    pod: Mapping[str, Any], zones: list[Zone], scope: str
) -> list[tuple[int, dict[str, Decimal]]] | None:
    """Where each container's (or the pod's) exclusive resources go; None: no zone can take them."""
    resources = pod_resources(pod)
    if scope == "pod":
        groups = [exclusive_requests(resources.qos, resources.effective)]
    else:
        groups = [exclusive_requests(resources.qos, c.requests) for c in resources.all_containers]
    plan: list[tuple[int, dict[str, Decimal]]] = []
    trial = [Zone(z.capacity, z.allocatable, dict(z.taken)) for z in zones]
    for index, wanted in enumerate(groups):
        if not wanted:
            continue
        chosen = choose_zone(trial, wanted)
        if chosen is None:
            return None
        container = resources.all_containers[index] if scope != "pod" else None
        # init containers run before the app containers and give their resources back
        if container is None or not container.init or container.sidecar:
            for name, quantity in wanted.items():
                trial[chosen].taken[name] = trial[chosen].taken.get(name, Decimal(0)) + quantity
            plan.append((chosen, wanted))
    return plan


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _runs(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in TERMINAL and not (pod.get("metadata") or {}).get(
        "deletionTimestamp"
    )


@dataclass
class NodeAccount:
    """What the exporter remembers of one node: the pods it admitted, in order, and where they went."""

    order: list[str] = field(default_factory=list)
    """Pod UIDs in admission order."""
    placed: dict[str, list[tuple[int, dict[str, Decimal]]]] = field(default_factory=dict)
    rejected: set[str] = field(default_factory=set)


def account(
    node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], memory: NodeAccount, shape: NodeTopologyShape
) -> tuple[list[Zone], list[Mapping[str, Any]]]:
    """The node's zones with its pods admitted (earlier admissions kept), and the pods it runs."""
    zones = empty_zones(node, shape.zones)
    running = [pod for pod in pods if _runs(pod)]
    by_uid = {str(pod["metadata"].get("uid", "")): pod for pod in running}
    memory.order = [uid for uid in memory.order if uid in by_uid]
    memory.placed = {uid: plan for uid, plan in memory.placed.items() if uid in by_uid}
    memory.rejected &= set(by_uid)
    for uid in memory.order:
        for zone_index, wanted in memory.placed.get(uid, []):
            if zone_index < len(zones):
                for name, quantity in wanted.items():
                    zones[zone_index].taken[name] = zones[zone_index].taken.get(name, Decimal(0)) + quantity
    known = set(memory.order)
    newcomers = sorted(
        (pod for uid, pod in by_uid.items() if uid not in known),
        key=lambda p: (str(p["metadata"].get("creationTimestamp", "")), _pod_key(p)),
    )
    for pod in newcomers:
        uid = str(pod["metadata"].get("uid", ""))
        memory.order.append(uid)
        plan = admit(pod, zones, shape.scope) if shape.policy != "none" else []
        if plan is None:
            memory.rejected.add(uid)
            log.warning(
                "%s: pod %s: TopologyAffinityError: no NUMA zone has room for its exclusive resources "
                "(a kubelet would reject it); it takes nothing",
                node["metadata"]["name"],
                _pod_key(pod),
            )
            continue
        memory.placed[uid] = plan
        for zone_index, wanted in plan:
            for name, quantity in wanted.items():
                zones[zone_index].taken[name] = zones[zone_index].taken.get(name, Decimal(0)) + quantity
    return zones, running


def topology_object(
    node: Mapping[str, Any], shape: NodeTopologyShape, zones: list[Zone], running: list[Mapping[str, Any]]
) -> JSON:
    meta = node["metadata"]
    pod_ids = [(str(p["metadata"].get("namespace", "")), str(p["metadata"].get("name", ""))) for p in running]
    return {
        "apiVersion": API_VERSION,
        "kind": "NodeResourceTopology",
        "metadata": {
            "name": meta["name"],
            "labels": {MANAGED_BY: MANAGER},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta.get("uid", "")}
            ],
        },
        "topologyPolicies": [],
        "attributes": [
            {"name": "topologyManagerPolicy", "value": shape.policy},
            {"name": "topologyManagerScope", "value": shape.scope},
            {"name": fingerprint.ATTRIBUTE, "value": fingerprint.sign(pod_ids)},
            {"name": fingerprint.ATTRIBUTE_METHOD, "value": fingerprint.METHOD_ALL},
        ],
        "zones": [
            {
                "name": f"node-{index}",
                "type": "Node",
                "costs": [
                    {"name": f"node-{other}", "value": 10 if other == index else 20}
                    for other in range(len(zones))
                ],
                "resources": [
                    {
                        "name": name,
                        "capacity": format_quantity(name, zone.capacity.get(name, Decimal(0))),
                        "allocatable": format_quantity(name, zone.allocatable[name]),
                        "available": format_quantity(name, max(zone.available(name), Decimal(0))),
                    }
                    for name in sorted(zone.allocatable)
                ],
            }
            for index, zone in enumerate(zones)
        ],
    }


def _content(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = obj.get("metadata") or {}
    return (
        obj.get("zones"),
        obj.get("attributes"),
        obj.get("topologyPolicies") or [],
        meta.get("ownerReferences"),
        meta.get("labels"),
    )


class TopologyExporter(WatchLoop[list[str]]):
    """Watches nodes and pods; each pass publishes every KWOK node's NodeResourceTopology."""

    settle_seconds = 0.05

    def __init__(self, api: ApiClient, *, resync_seconds: float = 30.0) -> None:
        super().__init__(api, resync_seconds)
        self.nodes = self.watched("/api/v1/nodes", "nodes")
        self.pods = self.watched("/api/v1/pods", "pods", {"fieldSelector": "spec.nodeName!="})
        self.topologies = self.watched(NRTS, "nrts", {"labelSelector": f"{MANAGED_BY}={MANAGER}"})
        self.accounts: dict[str, NodeAccount] = {}
        self._refused: dict[str, str] = {}

    async def started(self) -> None:
        log.info("watching nodes and pods; publishing NodeResourceTopologies")

    def reconciled(self, outcome: list[str]) -> None:
        if outcome:
            log.info("NodeResourceTopologies written: %s", ", ".join(outcome))

    def desired(self) -> dict[str, JSON]:
        """Node name -> the object it should have now."""
        pods_by_node: dict[str, list[Mapping[str, Any]]] = {}
        for pod in self.pods.objects.values():
            pods_by_node.setdefault(str((pod.get("spec") or {}).get("nodeName", "")), []).append(pod)
        wanted: dict[str, JSON] = {}
        for node in sorted(self.nodes.objects.values(), key=lambda n: str(n["metadata"]["name"])):
            meta = node["metadata"]
            if KWOK_ANNOTATION not in (meta.get("annotations") or {}):
                continue
            name = str(meta["name"])
            try:
                shape = node_shape(node)
            except ShapeError as error:
                if self._refused.get(name) != str(error):
                    log.error("node %s: no NodeResourceTopology published: %s", name, error)
                    self._refused[name] = str(error)
                continue
            self._refused.pop(name, None)
            memory = self.accounts.setdefault(name, NodeAccount())
            zones, running = account(node, pods_by_node.get(name, []), memory, shape)
            wanted[name] = topology_object(node, shape, zones, running)
        self.accounts = {name: memory for name, memory in self.accounts.items() if name in wanted}
        return wanted

    async def reconcile(self) -> list[str]:
        written, _ = await self.write_objects(
            NRTS, self.topologies, self.desired(), lambda existing, obj: _content(existing) == _content(obj)
        )
        return written


def main() -> None:
    controller_main(
        __doc__ or "",
        "secsched-topology-exporter",
        lambda api, resync: TopologyExporter(api, resync_seconds=resync),
        resync_help="republish at least this often",
        verbose_help="debug logging",
    )


if __name__ == "__main__":
    main()
