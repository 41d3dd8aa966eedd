"""The workloads section's classes, pure: their pods, where their pre-existing pods go, and the
placement check every run ends with.

Each class is one of kube-scheduler's scheduler_perf workloads (test/integration/scheduler_perf)
rebuilt on this benchmark's cluster (nodes of 16 CPUs in zones ``zone-a``, ``zone-b``,
``zone-c``): the pods carry the same kind of terms (a per-class ``color`` label, the same
topology keys), and a set of pods already bound when the measured ones come, as scheduler_perf's
``createPods`` init step makes, so that their terms cost what they cost in a real cluster. The
pre-existing pods are placed here, deterministically, so that they themselves keep the class's
constraints (at most one per host for hostname anti-affinity, balanced over zones for spreading).

The placement check lists every bound pod against its hard constraints: node selector and
required node affinity, required pod anti-affinity (symmetric), required pod affinity, hard
topology spread, and the nodes' allocatable resources.

Two classes have no scheduler_perf counterpart: ``load-aware``, the basic class under seed
000's load-aware profile (Trimaran's TargetLoadPacking reading Prometheus) instead of the
default one, and ``load-variation``, the same with LoadVariationRiskBalancing in
TargetLoadPacking's place (upstream cannot run both in one profile: ``load_class_config``), each on
nodes given a fixed CPU load. Their pods have no constraint beyond resources; where they went
against the plugin's threshold is measured (``load_outcome``) and reported, not counted as a
violation.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from bench import dra, storage
from bench.workload import pod_manifests
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.quantity import int_value, milli_value

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
ROLE_LABEL = "bench-role"
"""``existing`` on the pre-existing pods, ``measured`` on the measured ones (warm-up pods have none)."""
EXISTING = "existing"
MEASURED = "measured"
EXPECT_LABEL = "bench-expect"
UNSCHEDULABLE = "unschedulable"
"""``bench-expect: unschedulable`` marks the pods of the churn class that fit nowhere."""
LOW_PRIORITY = "bench-low"
HIGH_PRIORITY = "bench-high"
PRIORITIES = {LOW_PRIORITY: 10, HIGH_PRIORITY: 1000}
FILLER_REQUESTS = {"cpu": "14", "memory": "1Gi"}
"""The preemption class's low-priority pod on every node: leaves 1.9 of the 15.9 allocatable CPUs."""
PREEMPTOR_REQUESTS = {"cpu": "9", "memory": "500Mi"}
"""Fits only where a filler is gone, and only one per node."""
TOO_BIG_REQUESTS = {"cpu": "32", "memory": "500Mi"}
"""More CPU than any node has (16)."""
UNSCHEDULABLE_EVERY = 5
"""In the churn class, every fifth pod of the stream is one that fits nowhere."""
NODE_AFFINITY_ZONES = 2
"""The node-affinity class admits the first two zones (of three)."""
LOAD_AWARE = "load-aware"
LOAD_VARIATION = "load-variation"
TARGET_LOAD_PACKING = "TargetLoadPacking"
LOAD_VARIATION_RISK_BALANCING = "LoadVariationRiskBalancing"
TRIMARAN = (TARGET_LOAD_PACKING, LOAD_VARIATION_RISK_BALANCING, "LowRiskOverCommitment")
LOAD_CLASSES = {LOAD_AWARE: TARGET_LOAD_PACKING, LOAD_VARIATION: LOAD_VARIATION_RISK_BALANCING}
"""The classes scored by one Trimaran plugin reading the cluster's Prometheus, and that plugin."""
PLUGIN_DEFAULTS: Mapping[str, Mapping[str, float]] = {
    LOAD_VARIATION_RISK_BALANCING: {"safeVarianceMargin": 1.0, "safeVarianceSensitivity": 1.0},
}
"""A plugin's own args where it takes TargetLoadPacking's place: upstream's defaults, written out so
that the report and the soft check read them from the configuration both schedulers get."""
SOURCE_KEYS = ("metricProvider", "watcherAddress")
"""Where a Trimaran plugin's args say its metrics come from."""
RISK_THRESHOLD = 70
"""The load-variation class's soft check: pods on nodes whose CPU mean + margin x stddev ends above
this percent. LoadVariationRiskBalancing has no threshold of its own (it spreads risk); this is
seed 000's target, so that the two load classes' checks read alike."""
LOAD_LEVELS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.45, 0.55, 0.65, 0.80, 0.90)
"""The load classes' CPU load levels (the demo's), one drawn per node: most nodes fairly quiet,
one in six above seed 000's 70 % target, so that the target decides placements."""
LOAD_MEMORY_SHARE = 0.6
"""A node's memory load is this share of its CPU load (as in the demo; TargetLoadPacking reads CPU)."""


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    models: str
    """The scheduler_perf workload it follows."""
    what: str
    """One sentence for the report: the measured pods' constraints and the pre-existing pods."""
    color: str | None = None
    """The value of the ``color`` label the class's pods carry (and select), if any."""


CLASSES = (
    WorkloadClass(
        "basic",
        "SchedulingBasic",
        "requests only (the throughput section's pods); pre-existing pods balanced over zones and hosts",
    ),
    WorkloadClass(
        "required-anti-affinity",
        "SchedulingPodAntiAffinity",
        "`color: green`, required pod anti-affinity to `color: green` on `kubernetes.io/hostname`; "
        "pre-existing pods the same, one per host",
        "green",
    ),
    WorkloadClass(
        "required-affinity",
        "SchedulingPodAffinity",
        "`color: blue`, required pod affinity to `color: blue` on `topology.kubernetes.io/zone`; "
        "pre-existing pods the same, all in the first zone (so every measured pod must go there)",
        "blue",
    ),
    WorkloadClass(
        "preferred-affinity",
        "SchedulingPreferredPodAffinity + SchedulingPreferredPodAntiAffinity",
        "`color: red`, preferred pod affinity to `color: red` on the zone (weight 1) and preferred pod "
        "anti-affinity to `color: red` on the host (weight 1); pre-existing pods the same, balanced",
        "red",
    ),
    WorkloadClass(
        "node-affinity",
        "SchedulingNodeAffinity",
        "required node affinity `topology.kubernetes.io/zone In [zone-a, zone-b]` (two of the three "
        "zones); pre-existing pods the same, balanced over those zones",
    ),
    WorkloadClass(
        "spread-hard",
        "TopologySpreading",
        "`color: purple`, topology spread over the zone, maxSkew 1, DoNotSchedule; pre-existing pods "
        "the same, balanced over the zones",
        "purple",
    ),
    WorkloadClass(
        "spread-soft",
        "PreferredTopologySpreading",
        "`color: orange`, topology spread over the zone and over the host, maxSkew 1, ScheduleAnyway; "
        "pre-existing pods the same, balanced",
        "orange",
    ),
    WorkloadClass(
        "unschedulable-churn",
        "Unschedulable",
        f"the basic pods, with every {UNSCHEDULABLE_EVERY}th pod of the stream one that fits nowhere "
        f"({TOO_BIG_REQUESTS['cpu']} CPUs, priority class `{HIGH_PRIORITY}`); only the schedulable ones "
        "are measured, the others stay pending",
    ),
    WorkloadClass(
        "preemption",
        "PreemptionBasic",
        f"every node holds one pre-existing pod of priority class `{LOW_PRIORITY}` asking for "
        f"{FILLER_REQUESTS['cpu']} of its 15.9 allocatable CPUs; the measured pods, `{HIGH_PRIORITY}`, ask "
        f"for {PREEMPTOR_REQUESTS['cpu']}, so each one fits only by preempting one of them",
    ),
    WorkloadClass(
        "pvc",
        "SchedulingCSIPVs (with a real provisioner)",
        "the volumes section's pods, each with its own `local-wffc` (WaitForFirstConsumer) claim "
        "provisioned by the local cluster's provisioner; pre-existing pods are basic ones (no claims)",
    ),
    WorkloadClass(
        LOAD_AWARE,
        "none (SchedulingBasic's pods, Trimaran's profile)",
        "the basic pods and pre-existing pods, scheduled with seed 000's profile (TargetLoadPacking "
        "reading Prometheus, target 70 %; NodeResourcesBalancedAllocation off); each node carries a "
        "fixed CPU load of 5-90 % (one in six above the target)",
    ),
    WorkloadClass(
        LOAD_VARIATION,
        "none (SchedulingBasic's pods, Trimaran's profile)",
        "the basic pods and pre-existing pods, scheduled with seed 000's profile with "
        "LoadVariationRiskBalancing in TargetLoadPacking's place (upstream's defaults, margin 1 and "
        "sensitivity 1, reading Prometheus; NodeResourcesBalancedAllocation off); each node the "
        "`load-aware` class's fixed CPU load, with no variation (stddev 0)",
    ),
    WorkloadClass(
        "dra",
        "SchedulingWithResourceClaimTemplate (structured parameters)",
        f"each pod names a ResourceClaimTemplate of one device of the fake DRA driver's DeviceClass "
        f"(a CEL selector on the driver); the controller manager creates a claim per pod and the "
        f"scheduler allocates it; every node publishes a ResourceSlice of {dra.DEVICES_PER_NODE} GPUs; "
        "pre-existing pods are basic ones (no claims)",
    ),
)
CLASS_NAMES = tuple(klass.name for klass in CLASSES)
BY_NAME = {klass.name: klass for klass in CLASSES}


# -- nodes ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)
    """TargetLoadPacking relates load to the node's capacity, not its allocatable."""


def nodes_of(manifests: Iterable[JSON]) -> list[Node]:
    """Nodes from their API objects, in index order (kwok-node-2 before kwok-node-10)."""
    found = [
        Node(
            str(item["metadata"]["name"]),
            dict(item["metadata"].get("labels") or {}),
            dict((item.get("status") or {}).get("allocatable") or {}),
            dict((item.get("status") or {}).get("capacity") or {}),
        )
        for item in manifests
    ]
    return sorted(found, key=lambda node: (len(node.name), node.name))


def zones_of(nodes: Sequence[Node]) -> list[str]:
    return sorted({node.labels.get(ZONE_KEY, "") for node in nodes})


def _by_zone(nodes: Sequence[Node], zones: Sequence[str]) -> list[list[Node]]:
    return [[node for node in nodes if node.labels.get(ZONE_KEY, "") == zone] for zone in zones]


def zone_balanced(nodes: Sequence[Node], count: int, zones: Sequence[str] | None = None) -> list[Node]:
    """``count`` nodes: pod i to zone i mod Z, round robin over that zone's hosts (counts per zone
    differ by at most one, and per host within a zone too)."""
    groups = [group for group in _by_zone(nodes, zones or zones_of(nodes)) if group]
    if not groups:
        raise ValueError("no node to place pods on")
    return [groups[i % len(groups)][(i // len(groups)) % len(groups[i % len(groups)])] for i in range(count)]


def distinct_hosts(nodes: Sequence[Node], count: int) -> list[Node]:
    """``count`` different nodes, evenly spaced over the list."""
    if count > len(nodes):
        raise ValueError(f"{count} pods cannot each have a host of their own on {len(nodes)} nodes")
    return [nodes[i * len(nodes) // count] for i in range(count)] if count else []


def existing_count(klass: str, requested: int, nodes: int) -> int:
    """How many pre-existing pods the class gets: the preemption class one per node, others as asked."""
    return nodes if klass == "preemption" else requested


def room(klass: str, nodes: int, existing: int, measured: int) -> str | None:
    """Why ``measured`` pods of the class cannot all be bound beside ``existing`` ones (None: they can)."""
    if klass == "required-anti-affinity" and existing + measured > nodes:
        return (
            f"{existing:,} pre-existing + {measured:,} measured pods with hostname anti-affinity need as "
            f"many nodes; there are {nodes:,}"
        )
    if klass == "preemption" and measured > nodes:
        return f"{measured:,} preemptors need a node each (one fits per node); there are {nodes:,}"
    return None


# -- the pods ---------------------------------------------------------------------------------
def _term(color: str, key: str) -> JSON:
    return {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": key}


def _spread(color: str, key: str, when: str) -> JSON:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"color": color}},
    }


def _set_requests(pod: JSON, requests: Mapping[str, str]) -> None:
    pod["spec"]["containers"][0]["resources"] = {"requests": dict(requests)}


def _constrain(pod: JSON, klass: str, zones: Sequence[str]) -> None:
    """Give one pod the class's labels and terms (the same for pre-existing and measured pods)."""
    spec = pod["spec"]
    color = BY_NAME[klass].color
    if color:
        pod["metadata"]["labels"]["color"] = color
    if klass == "required-anti-affinity" and color:
        terms = [_term(color, HOSTNAME_KEY)]
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    elif klass == "required-affinity" and color:
        spec["affinity"] = {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(color, ZONE_KEY)]}
        }
    elif klass == "preferred-affinity" and color:
        spec["affinity"] = {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": _term(color, ZONE_KEY)}
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": _term(color, HOSTNAME_KEY)}
                ]
            },
        }
    elif klass == "node-affinity":
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE_KEY, "operator": "In", "values": list(allowed_zones(zones))}
                            ]
                        }
                    ]
                }
            }
        }
    elif klass == "spread-hard" and color:
        spec["topologySpreadConstraints"] = [_spread(color, ZONE_KEY, "DoNotSchedule")]
    elif klass == "spread-soft" and color:
        spec["topologySpreadConstraints"] = [
            _spread(color, ZONE_KEY, "ScheduleAnyway"),
            _spread(color, HOSTNAME_KEY, "ScheduleAnyway"),
        ]


def allowed_zones(zones: Sequence[str]) -> list[str]:
    """The zones the node-affinity class admits: the first two."""
    return list(zones[:NODE_AFFINITY_ZONES])


def measured_manifests(
    klass: str, prefix: str, count: int, scheduler_name: str, zones: Sequence[str], seed: int = 0
) -> list[JSON]:
    """The class's ``count`` measured pods, named ``<prefix>-<i>``; the same seed, the same requests."""
    if klass not in BY_NAME:
        raise ValueError(f"unknown workload class {klass!r}; known: {', '.join(CLASS_NAMES)}")
    if klass == "pvc":
        pods = storage.volume_pod_manifests(prefix, count, scheduler_name, seed)
    else:
        pods = pod_manifests(prefix, count, scheduler_name, seed)
    for index, pod in enumerate(pods):
        pod["metadata"]["labels"][ROLE_LABEL] = MEASURED
        _constrain(pod, klass, zones)
        if klass == "dra":
            dra.claim_pod(pod)
        if klass == "preemption":
            _set_requests(pod, PREEMPTOR_REQUESTS)
            pod["spec"]["priorityClassName"] = HIGH_PRIORITY
        elif klass == "unschedulable-churn" and index % UNSCHEDULABLE_EVERY == UNSCHEDULABLE_EVERY - 1:
            _set_requests(pod, TOO_BIG_REQUESTS)
            pod["spec"]["priorityClassName"] = HIGH_PRIORITY
            pod["metadata"]["labels"][EXPECT_LABEL] = UNSCHEDULABLE
    return pods


def expected_unschedulable(pod: JSON) -> bool:
    return (pod["metadata"].get("labels") or {}).get(EXPECT_LABEL) == UNSCHEDULABLE


def existing_manifests(
    klass: str, count: int, nodes: Sequence[Node], scheduler_name: str, seed: int = 0
) -> list[JSON]:
    """The class's pre-existing pods, ``x-<i>``, each already bound (``spec.nodeName``) to a node
    chosen so that they keep the class's own constraints."""
    zones = zones_of(nodes)
    count = existing_count(klass, count, len(nodes))
    if klass == "required-anti-affinity":
        hosts = distinct_hosts(nodes, count)
    elif klass == "required-affinity":
        hosts = zone_balanced(nodes, count, zones[:1])
    elif klass == "node-affinity":
        hosts = zone_balanced(nodes, count, allowed_zones(zones))
    elif klass == "preemption":
        hosts = list(nodes)
    else:
        hosts = zone_balanced(nodes, count)
    pods = pod_manifests("x", count, scheduler_name, seed)
    for pod, node in zip(pods, hosts, strict=True):
        pod["metadata"]["labels"][ROLE_LABEL] = EXISTING
        if klass not in ("unschedulable-churn", "pvc"):
            _constrain(pod, klass, zones)
        if klass == "preemption":
            _set_requests(pod, FILLER_REQUESTS)
            pod["spec"]["priorityClassName"] = LOW_PRIORITY
        pod["spec"]["nodeName"] = node.name
    return pods


def priority_classes() -> list[JSON]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "description": "The benchmark's workloads section.",
        }
        for name, value in PRIORITIES.items()
    ]


# -- the placement check ------------------------------------------------------------------------
def selector_matches(selector: JSON | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector: None matches nothing, ``{}`` everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or ()
        if operator == "In" and not (key in labels and labels[key] in values):
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def _requirement(expression: JSON, value: str | None) -> bool:
    operator = expression.get("operator")
    values = [str(item) for item in expression.get("values") or ()]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and values:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term_matches_node(term: JSON, node: Node) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    return all(_requirement(e, node.labels.get(str(e.get("key")))) for e in expressions) and all(
        _requirement(f, node.name if f.get("key") == "metadata.name" else None) for f in fields
    )


def node_matches(pod: JSON, node: Node) -> bool:
    """The pod's nodeSelector and required node affinity admit the node."""
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if node.labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    return any(_term_matches_node(term, node) for term in terms)


def _namespace_of(pod: JSON) -> str:
    return str(pod["metadata"].get("namespace") or "")


def _labels_of(pod: JSON) -> Mapping[str, str]:
    return pod["metadata"].get("labels") or {}


def _name_of(pod: JSON) -> str:
    namespace = _namespace_of(pod)
    return f"{namespace}/{pod['metadata']['name']}" if namespace else str(pod["metadata"]["name"])


def term_selects(term: JSON, owner: JSON, other: JSON) -> bool:
    """A pod (anti-)affinity term of ``owner`` selects ``other`` (namespaces, then labels).

    No ``namespaces`` and no ``namespaceSelector``: the owner's namespace; ``namespaceSelector: {}``:
    every namespace; a non-empty one cannot be read without the namespaces' labels and selects none.
    """
    names = term.get("namespaces") or []
    namespace_selector = term.get("namespaceSelector")
    namespace = _namespace_of(other)
    if not names and namespace_selector is None:
        in_scope = namespace == _namespace_of(owner)
    else:
        in_scope = namespace in names or (
            namespace_selector is not None
            and not namespace_selector.get("matchLabels")
            and not namespace_selector.get("matchExpressions")
        )
    return in_scope and selector_matches(term.get("labelSelector"), _labels_of(other))


def _required(pod: JSON, kind: str) -> list[JSON]:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    return list((affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def _bound(pods: Iterable[JSON]) -> list[JSON]:
    return [
        pod
        for pod in pods
        if (pod.get("spec") or {}).get("nodeName")
        and not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]


def _requests(pod: JSON) -> tuple[int, int]:
    """(milli-CPU, memory bytes) the scheduler counts for the pod: containers, init containers, overhead."""

    def of(resources: JSON | None) -> tuple[int, int]:
        requests = (resources or {}).get("requests") or {}
        return milli_value(requests.get("cpu", 0)), int_value(requests.get("memory", 0))

    spec = pod.get("spec") or {}
    cpu = memory = 0
    for container in spec.get("containers") or ():
        c, m = of(container.get("resources"))
        cpu, memory = cpu + c, memory + m
    for container in spec.get("initContainers") or ():
        c, m = of(container.get("resources"))
        cpu, memory = max(cpu, c), max(memory, m)
    overhead = spec.get("overhead") or {}
    return cpu + milli_value(overhead.get("cpu", 0)), memory + int_value(overhead.get("memory", 0))


def check_placement(pods: Iterable[JSON], node_objects: Iterable[JSON] | Iterable[Node]) -> list[str]:
    """Every bound pod against its hard constraints; one line per violation, ``rule: what``."""
    nodes = [item if isinstance(item, Node) else nodes_of([item])[0] for item in node_objects]
    by_name = {node.name: node for node in nodes}
    bound = _bound(pods)
    found: list[str] = []
    found += _check_nodes(bound, by_name)
    found += _check_resources(bound, by_name)
    found += _check_anti_affinity(bound, by_name)
    found += _check_affinity(bound, by_name)
    found += _check_spread(bound, nodes, by_name)
    return found


def _node_of(pod: JSON, by_name: Mapping[str, Node]) -> Node | None:
    return by_name.get(str(pod["spec"]["nodeName"]))


def _check_nodes(bound: Sequence[JSON], by_name: Mapping[str, Node]) -> list[str]:
    found = []
    for pod in bound:
        node = _node_of(pod, by_name)
        if node is None:
            found.append(f"node affinity: {_name_of(pod)} is bound to {pod['spec']['nodeName']}, not a node")
        elif not node_matches(pod, node):
            found.append(f"node affinity: {_name_of(pod)} is on {node.name}, which it does not admit")
    return found


def _check_resources(bound: Sequence[JSON], by_name: Mapping[str, Node]) -> list[str]:
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for pod in bound:
        cpu, memory = _requests(pod)
        totals = used[str(pod["spec"]["nodeName"])]
        totals[0] += cpu
        totals[1] += memory
        totals[2] += 1
    found = []
    for name, (cpu, memory, count) in sorted(used.items()):
        node = by_name.get(name)
        if node is None or not node.allocatable:
            continue
        allocatable = node.allocatable
        limits = (
            ("CPU", cpu, milli_value(allocatable.get("cpu", 0)), "m"),
            ("memory", memory, int_value(allocatable.get("memory", 0)), " bytes"),
            ("pods", count, int_value(allocatable.get("pods", 0)), ""),
        )
        for what, have, most, unit in limits:
            if have > most:
                found.append(f"resources: {name} holds {have:,}{unit} of {what}, allocatable {most:,}{unit}")
    return found


class _Domains:
    """Bound pods by topology domain, one index per topology key, built when first asked for."""

    def __init__(self, bound: Sequence[JSON], by_name: Mapping[str, Node]) -> None:
        self.bound = bound
        self.by_name = by_name
        self._index: dict[str, dict[str, list[JSON]]] = {}

    def value(self, pod: JSON, key: str) -> str | None:
        node = _node_of(pod, self.by_name)
        return None if node is None else node.labels.get(key)

    def pods(self, key: str, value: str) -> list[JSON]:
        if key not in self._index:
            index: dict[str, list[JSON]] = defaultdict(list)
            for pod in self.bound:
                found = self.value(pod, key)
                if found is not None:
                    index[found].append(pod)
            self._index[key] = index
        return self._index[key].get(value, [])


def _check_anti_affinity(bound: Sequence[JSON], by_name: Mapping[str, Node]) -> list[str]:
    """No two pods in one domain where either's required anti-affinity term selects the other."""
    domains = _Domains(bound, by_name)
    pairs: dict[tuple[str, str], str] = {}
    for pod in bound:
        for term in _required(pod, "podAntiAffinity"):
            key = str(term.get("topologyKey"))
            value = domains.value(pod, key)
            if value is None:
                continue
            for other in domains.pods(key, value):
                if other is pod or not term_selects(term, pod, other):
                    continue
                pair = tuple(sorted((_name_of(pod), _name_of(other))))
                pairs.setdefault(
                    (pair[0], pair[1]), f"anti-affinity: {pair[0]} and {pair[1]} share {key}={value}"
                )
    return list(pairs.values())


def _created(pod: JSON) -> tuple[str, str]:
    return (str(pod["metadata"].get("creationTimestamp") or ""), _name_of(pod))


def _check_affinity(bound: Sequence[JSON], by_name: Mapping[str, Node]) -> list[str]:
    """Each required affinity term has a pod it selects in the pod's domain. A pod whose term
    selects itself may have been the first: it passes if no pod the term selects was created before it."""
    domains = _Domains(bound, by_name)
    found = []
    for pod in bound:
        for term in _required(pod, "podAffinity"):
            key = str(term.get("topologyKey"))
            value = domains.value(pod, key)
            if value is not None and any(
                other is not pod and term_selects(term, pod, other) for other in domains.pods(key, value)
            ):
                continue
            if term_selects(term, pod, pod):
                earlier = [
                    other
                    for other in bound
                    if other is not pod and term_selects(term, pod, other) and _created(other) < _created(pod)
                ]
                if not earlier:
                    continue
            where = f"{key}={value}" if value is not None else f"a node without {key}"
            found.append(f"affinity: {_name_of(pod)} is in {where}, with no pod its term selects")
    return found


def _check_spread(bound: Sequence[JSON], nodes: Sequence[Node], by_name: Mapping[str, Node]) -> list[str]:
    """For each hard spread constraint: over the domains of the nodes the pod admits, the counts of the
    pods it selects differ by at most maxSkew (every placement keeping that keeps the end state so)."""
    seen: set[str] = set()
    found = []
    for pod in bound:
        spec = pod["spec"]
        for constraint in spec.get("topologySpreadConstraints") or ():
            if constraint.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
                continue
            honour = constraint.get("nodeAffinityPolicy", "Honor") == "Honor"
            key = json.dumps(
                [
                    _namespace_of(pod),
                    constraint,
                    spec.get("nodeSelector") if honour else None,
                    ((spec.get("affinity") or {}).get("nodeAffinity") or {}) if honour else None,
                ],
                sort_keys=True,
            )
            if key in seen:
                continue
            seen.add(key)
            topology = str(constraint.get("topologyKey"))
            eligible = {
                node.name: node.labels[topology]
                for node in nodes
                if topology in node.labels and (not honour or node_matches(pod, node))
            }
            counts = dict.fromkeys(sorted(set(eligible.values())), 0)
            for other in bound:
                where = eligible.get(str(other["spec"]["nodeName"]))
                if (
                    where is not None
                    and _namespace_of(other) == _namespace_of(pod)
                    and selector_matches(constraint.get("labelSelector"), _labels_of(other))
                ):
                    counts[where] += 1
            if not counts:
                continue
            lowest = min(counts.values())
            if len(counts) < int(constraint.get("minDomains") or 1):
                lowest = 0
            skew = max(counts.values()) - lowest
            if skew > int(constraint.get("maxSkew", 1)):
                shown = ", ".join(f"{domain} {count}" for domain, count in counts.items())
                found.append(
                    f"topology spread: {json.dumps(constraint.get('labelSelector'), sort_keys=True)} over "
                    f"{topology}: {shown}; skew {skew} > maxSkew {constraint.get('maxSkew', 1)}"
                )
    return found


def rules_broken(violations: Iterable[str]) -> dict[str, int]:
    """How many violations per rule (the text before the first colon)."""
    counts: dict[str, int] = defaultdict(int)
    for text in violations:
        counts[text.split(":", 1)[0]] += 1
    return dict(counts)


# -- the load classes (load-aware, load-variation) -------------------------------------------------
def starting_load(nodes: Sequence[Node], seed: int = 0) -> dict[str, Any]:
    """The load model's state for the load classes (loadmodel.LoadModel.update): each node a
    level of ``LOAD_LEVELS``, the same for the same seed.

    No noise and no load from pods: every Prometheus sample of a node is then the same, so both
    schedulers read the same averages whenever they run and whatever ran before them (with pods
    counted, the 15-minute averages of the second run would still hold the first run's pods).
    The price is LoadVariationRiskBalancing's stddev, 0 on every node: the model's only source
    of variation is Gaussian noise drawn at each scrape, whose ``stddev_over_time`` depends on
    which samples a run's window holds (none but one just after Prometheus starts), so it would
    differ between the two schedulers' runs.
    """
    rng = random.Random(seed)
    levels = {}
    for node in nodes:
        cpu = rng.choice(LOAD_LEVELS)
        levels[node.name] = {"cpu": cpu, "memory": round(cpu * LOAD_MEMORY_SHARE, 2), "noise": 0.0}
    return {"default": {"cpu": 0.0, "memory": 0.0, "noise": 0.0}, "nodes": levels, "podFactor": 0.0}


def load_class_config(
    seed_config: str,
    plugin: str,
    scheduler_name: str,
    qps: float,
    burst: int,
    kubeconfig: Path | str,
    prometheus_url: str,
) -> str:
    """Seed 000's profile as the benchmark's one profile, scored by ``plugin``: TargetLoadPacking
    as the seed has it, or another Trimaran plugin in its place (``_in_place_of``).

    ``seed_config``: the seed's KubeSchedulerConfiguration in v1 (deploy/06's, ``${PROM_URL}``
    unfilled), which both schedulers read; the client limits and the kubeconfig are those every
    class's schedulers get. The profile must enable ``plugin`` and no other Trimaran plugin that
    reads a metric provider itself (no ``watcherAddress``): upstream starts an in-process
    load-watcher per such plugin, and the second one panics at start (both register ``/watcher``
    on Go's default ServeMux; scheduler-plugins v0.34.7, load-watcher v0.2.4), which is why
    TargetLoadPacking and LoadVariationRiskBalancing are two classes rather than one.
    """
    document = yaml.safe_load(seed_config.replace("${PROM_URL}", prometheus_url))
    [profile] = document["profiles"]
    profile["schedulerName"] = scheduler_name
    if plugin != TARGET_LOAD_PACKING:
        _in_place_of(profile, TARGET_LOAD_PACKING, plugin, dict(PLUGIN_DEFAULTS.get(plugin, {})))
    enabled = {
        entry.get("name")
        for point in (profile.get("plugins") or {}).values()
        for entry in (point or {}).get("enabled") or ()
    }
    args = {entry.get("name"): entry.get("args") or {} for entry in profile.get("pluginConfig") or ()}
    watchers = [name for name in TRIMARAN if name in enabled and not args.get(name, {}).get("watcherAddress")]
    if plugin not in enabled:
        raise ValueError(f"the seed's profile does not enable {TARGET_LOAD_PACKING}")
    if len(watchers) > 1:
        raise ValueError(
            f"{' and '.join(watchers)} would each start upstream's in-process load-watcher, and the "
            "second start panics (/watcher registered twice): give all but one a watcherAddress"
        )
    document["clientConnection"] = {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst}
    return yaml.safe_dump(document, sort_keys=False)


def _in_place_of(profile: JSON, old: str, new: str, args: JSON) -> None:
    """Put ``new`` where the profile has ``old``, so that the two classes differ in that plugin
    alone: the same extension points and weights, and in pluginConfig ``args`` plus ``old``'s
    metric source (its ``metricProvider`` and ``watcherAddress``). Entries of ``new`` already
    there are dropped, so that it is enabled and configured once."""
    for point in (profile.get("plugins") or {}).values():
        if point and point.get("enabled"):
            point["enabled"] = [
                {**entry, "name": new} if entry.get("name") == old else entry
                for entry in point["enabled"]
                if entry.get("name") != new
            ]
    entries = []
    for entry in profile.get("pluginConfig") or ():
        if entry.get("name") == old:
            source = {key: value for key, value in (entry.get("args") or {}).items() if key in SOURCE_KEYS}
            entries.append({"name": new, "args": {**args, **source}})
        elif entry.get("name") != new:
            entries.append(entry)
    profile["pluginConfig"] = entries


def _args_of(config: str, plugin: str) -> JSON | None:
    """``plugin``'s args in a config's first profile that configures it (None if none does)."""
    document = yaml.safe_load(config) or {}
    for profile in document.get("profiles") or ():
        for entry in profile.get("pluginConfig") or ():
            if entry.get("name") == plugin:
                return dict(entry.get("args") or {})
    return None


class LoadRule(Protocol):
    """How a load class's soft check reads a node at the end of a run, as its plugin would: the
    CPU it counts for a pod, the CPU it divides by, what the node's stddev adds, the threshold."""

    @property
    def threshold(self) -> float: ...

    def pod_cpu(self, pod: JSON) -> int: ...

    def node_cpu(self, node: Node) -> int: ...

    def spread(self, stddev: float) -> float: ...


@dataclass(frozen=True)
class PackingArgs:
    """What TargetLoadPacking predicts a pod's CPU with, and its target (upstream's defaults)."""

    target: int = 40
    """``targetUtilization``, percent."""
    multiplier: float = 1.5
    """``defaultRequestsMultiplier``: a container's predicted CPU is its request times this."""
    default_cpu: int = 1000
    """``defaultRequests.cpu`` in millicores: a container with neither request nor limit."""

    @property
    def threshold(self) -> float:
        return float(self.target)

    def pod_cpu(self, pod: JSON) -> int:
        return predicted_cpu(pod, self)

    def node_cpu(self, node: Node) -> int:
        """TargetLoadPacking relates load to the node's capacity."""
        return milli_value((node.capacity or node.allocatable).get("cpu", 0))

    def spread(self, stddev: float) -> float:
        """TargetLoadPacking reads the average alone."""
        return 0.0


def packing_args(config: str) -> PackingArgs:
    """TargetLoadPacking's args in a config's first profile that configures it (defaults if none)."""
    args = _args_of(config, TARGET_LOAD_PACKING)
    if args is None:
        return PackingArgs()
    defaults = PackingArgs()
    return PackingArgs(
        int(args.get("targetUtilization", defaults.target)),
        float(args.get("defaultRequestsMultiplier", defaults.multiplier)),
        milli_value((args.get("defaultRequests") or {}).get("cpu", f"{defaults.default_cpu}m")),
    )


def predicted_cpu(pod: JSON, args: PackingArgs) -> int:
    """TargetLoadPacking's predicted CPU of a pod (millicores): per container its limit, else its
    request times the multiplier (rounded half away from zero, as Go's math.Round), else the
    default; plus the pod's overhead."""
    spec = pod.get("spec") or {}
    total = 0
    for container in spec.get("containers") or ():
        resources = container.get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        if "cpu" in limits:
            total += milli_value(limits["cpu"])
        elif "cpu" in requests:
            total += math.floor(milli_value(requests["cpu"]) * args.multiplier + 0.5)
        else:
            total += args.default_cpu
    return total + milli_value((spec.get("overhead") or {}).get("cpu", 0))


@dataclass(frozen=True)
class VariationArgs:
    """LoadVariationRiskBalancing's margin and sensitivity (upstream's defaults), and the soft
    check's threshold, which the plugin has none of (``RISK_THRESHOLD``)."""

    margin: float = 1.0
    """``safeVarianceMargin``: the stddev's multiplier."""
    sensitivity: float = 1.0
    """``safeVarianceSensitivity``: the stddev is taken to the power 1 / this."""
    threshold: float = RISK_THRESHOLD

    def pod_cpu(self, pod: JSON) -> int:
        """The pod's effective CPU request (Trimaran's GetResourceRequested), what the plugin adds."""
        return _requests(pod)[0]

    def node_cpu(self, node: Node) -> int:
        """LoadVariationRiskBalancing relates load to the node's allocatable."""
        return milli_value(node.allocatable.get("cpu", 0))

    def spread(self, stddev: float) -> float:
        """What a stddev (a ratio) adds to the mean, in percent, as the plugin's computeScore: bounded
        to [0, 1], to the power 1 / sensitivity (Go's Pow(x, +Inf) for 0), times the margin, bounded
        again."""
        sigma = min(max(stddev, 0.0), 1.0)
        if self.sensitivity > 0:
            sigma **= 1 / self.sensitivity
        else:
            sigma = 1.0 if sigma == 1.0 else 0.0
        return 100 * min(max(sigma * self.margin, 0.0), 1.0)


def variation_args(config: str) -> VariationArgs:
    """LoadVariationRiskBalancing's args in a config's first profile that configures it
    (defaults if none)."""
    args = _args_of(config, LOAD_VARIATION_RISK_BALANCING) or {}
    defaults = VariationArgs()
    return VariationArgs(
        float(args.get("safeVarianceMargin", defaults.margin)),
        float(args.get("safeVarianceSensitivity", defaults.sensitivity)),
    )


def load_rule(config: str, plugin: str) -> LoadRule:
    """The soft check's reading of ``plugin`` as the config sets it up."""
    if plugin == LOAD_VARIATION_RISK_BALANCING:
        return variation_args(config)
    return packing_args(config)


@dataclass(frozen=True)
class LoadOutcome:
    """Where a run's measured pods went against the class's threshold (a soft measure)."""

    pods: int
    """Measured pods bound."""
    over_target: int
    """Of them, those on a node whose CPU load ends above the threshold: its own load (plus what
    its stddev adds, for LoadVariationRiskBalancing) and the CPU the plugin counts for the
    measured pods bound there."""
    hot_start: int
    """Of those, the ones on a node above the threshold before any of them (its own load alone)."""


def load_outcome(
    pods: Iterable[JSON], nodes: Sequence[Node], load: Mapping[str, Any], rule: LoadRule
) -> LoadOutcome:
    """The measured pods' placement against the threshold, by the load model's node loads
    (``load``: what ``starting_load`` gave the exporter; pods add none there, so the run's pods are
    added here as the plugin counts them). A node's stddev is its noise sigma, which is what
    Prometheus' ``stddev_over_time`` tends to."""
    levels = load.get("nodes") or {}
    default = load.get("default") or {}
    by_name = {node.name: node for node in nodes}
    measured = [pod for pod in _bound(pods) if _labels_of(pod).get(ROLE_LABEL) == MEASURED]
    added: dict[str, int] = defaultdict(int)
    for pod in measured:
        added[str(pod["spec"]["nodeName"])] += rule.pod_cpu(pod)
    over = hot = 0
    for pod in measured:
        name = str(pod["spec"]["nodeName"])
        node = by_name.get(name)
        size = rule.node_cpu(node) if node else 0
        level = {**default, **(levels.get(name) or {})}
        base = 100 * float(level.get("cpu", 0.0)) + rule.spread(float(level.get("noise", 0.0)))
        end = base + (100 * added[name] / size if size else 0.0)
        over += end > rule.threshold
        hot += base > rule.threshold
    return LoadOutcome(len(measured), over, hot)
