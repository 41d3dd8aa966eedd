"""The chaos run's mixed burst (pure): which pods, claims, PodGroups and fillers, and in what order.

Every pod fits, so that "every pod that fits is bound" reads simply "every pod is bound":

- plain pods, the throughput benchmark's (100m-500m, 128-512Mi);
- ``spread`` pods: a DoNotSchedule topology spread over the zones, maxSkew 1;
- ``anti`` pods: a required pod anti-affinity to each other on the hostname (fewer than nodes);
- ``pvc`` pods: each mounting a claim of its own on ``local-wffc`` (WaitForFirstConsumer);
- gangs of 3-6 pods, each a PodGroup with minMember its size (Coscheduling);
- preemptors: priority ``bench-high``, 9 CPUs, admitted only on a few tainted nodes that each
  hold one ``bench-low`` filler of 14 CPUs bound before the run, so each preemptor fits only by
  evicting a filler (one per node).

The kinds come mixed in one seeded order, so a fault finds every kind in flight. The pod kinds
reuse the benchmark's builders (`bench.workloadclasses`, `bench.storage`, `bench.gang`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench import storage
from bench.gang import gang_manifests, gang_sizes
from bench.workload import pod_manifests
from bench.workloadclasses import (
    FILLER_REQUESTS,
    HOSTNAME_KEY,
    LOW_PRIORITY,
    Node,
    measured_manifests,
    priority_classes,
    zones_of,
)
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.plugins.coscheduling.podgroup import POD_GROUP_LABEL

PREEMPTION_TAINT = "chaos.secsched.io/preemption"
"""The taint of the nodes kept for fillers and preemptors (NoSchedule): no other pod goes there."""
RUN_LABEL = "chaos-run"
GANG_MEMBERS = (3, 6)
SHARES = {"spread": 0.15, "anti": 0.10, "pvc": 0.10, "gang": 0.20, "preemptor": 0.05}
"""Of the pods: what each kind takes; plain pods make up the rest."""


@dataclass
class Workload:
    """Everything one chaos run creates, in the order it creates it."""

    pods: list[JSON]
    """The burst, in creation order (kinds interleaved)."""
    claims: list[JSON]
    podgroups: list[JSON]
    fillers: list[JSON]
    """Low-priority pods bound (``spec.nodeName``) before the run, one per tainted node."""
    tainted_nodes: list[str]
    priority_classes: list[JSON] = field(default_factory=priority_classes)

    @property
    def names(self) -> list[str]:
        return [str(pod["metadata"]["name"]) for pod in self.pods]

    @property
    def filler_names(self) -> list[str]:
        return [str(pod["metadata"]["name"]) for pod in self.fillers]

    def counts(self) -> dict[str, int]:
        """Pods of each kind (the label ``chaos-kind``)."""
        return dict(Counter(pod["metadata"]["labels"]["chaos-kind"] for pod in self.pods))


def _toleration() -> JSON:
    return {"key": PREEMPTION_TAINT, "operator": "Exists", "effect": "NoSchedule"}


def kind_counts(pods: int, nodes: int) -> dict[str, int]:
    """How many pods of each kind a burst of ``pods`` gets on ``nodes`` nodes; refuses what cannot fit."""
    if pods < 20:
        raise ValueError(f"pods={pods}: a chaos burst needs at least 20 pods (one of each kind and gangs)")
    if nodes < 10:
        raise ValueError(f"nodes={nodes}: a chaos run needs at least 10 nodes (some are kept for preemption)")
    counts = {kind: max(1, int(pods * share)) for kind, share in SHARES.items()}
    counts["preemptor"] = min(counts["preemptor"], max(1, nodes // 20))
    counts["anti"] = min(counts["anti"], nodes - counts["preemptor"] - 1)
    counts["plain"] = pods - sum(counts.values())
    return counts


def build(nodes: Sequence[Node], pods: int, scheduler_name: str, seed: int = 0) -> Workload:
    """The burst of ``pods`` pods on these nodes (the last few are tainted for preemption)."""
    counts = kind_counts(pods, len(nodes))
    zones = zones_of(nodes)
    tainted = [node.name for node in nodes[len(nodes) - counts["preemptor"] :]]
    by_kind: dict[str, list[JSON]] = {
        "plain": pod_manifests("plain", counts["plain"], scheduler_name, seed),
        "spread": measured_manifests("spread-hard", "spread", counts["spread"], scheduler_name, zones, seed),
        "anti": measured_manifests(
            "required-anti-affinity", "anti", counts["anti"], scheduler_name, zones, seed
        ),
        "pvc": measured_manifests("pvc", "pvc", counts["pvc"], scheduler_name, zones, seed),
        "preemptor": measured_manifests(
            "preemption", "pre", counts["preemptor"], scheduler_name, zones, seed
        ),
    }
    for pod in by_kind["preemptor"]:
        spec = pod["spec"]
        spec["tolerations"] = [_toleration()]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME_KEY, "operator": "In", "values": tainted}]}
                    ]
                }
            }
        }
    sizes = _gang_sizes(counts["gang"], seed)
    podgroups, gang_pods = gang_manifests("gang", sizes, scheduler_name, seed)
    claims = storage.claim_manifests([str(pod["metadata"]["name"]) for pod in by_kind["pvc"]], seed)
    rng = random.Random(seed)
    mixed: list[list[JSON]] = []
    for kind, manifests in by_kind.items():
        mixed += [[_labelled(pod, kind)] for pod in manifests]
    # A gang's pods come together (as a Job's do), the gang at a random place in the stream.
    mixed += [
        [_labelled(pod, "gang") for pod in gang_pods if _group(pod) == _name(group)] for group in podgroups
    ]
    rng.shuffle(mixed)
    return Workload(
        pods=[pod for chunk in mixed for pod in chunk],
        claims=claims,
        podgroups=podgroups,
        fillers=[_filler(node, scheduler_name) for node in tainted],
        tainted_nodes=tainted,
    )


def _gang_sizes(members: int, seed: int) -> list[int]:
    """Gangs of 3-6 pods adding up to ``members`` exactly (the last one takes what is left, >= 1)."""
    sizes: list[int] = []
    for size in gang_sizes(max(1, members // GANG_MEMBERS[0]), GANG_MEMBERS, seed):
        if sum(sizes) + size > members:
            break
        sizes.append(size)
    if sum(sizes) < members:
        sizes.append(members - sum(sizes))
    return sizes


def _name(obj: JSON) -> str:
    return str(obj["metadata"]["name"])


def _group(pod: JSON) -> str:
    return str(pod["metadata"]["labels"].get(POD_GROUP_LABEL))


def _labelled(pod: JSON, kind: str) -> JSON:
    pod["metadata"]["labels"]["chaos-kind"] = kind
    pod["metadata"]["labels"][RUN_LABEL] = "burst"
    return pod


def _filler(node: str, scheduler_name: str) -> JSON:
    """A low-priority pod bound to ``node`` before the run, named after it (``filler-<node>``)."""
    [pod] = pod_manifests(f"filler-{node}", 1, scheduler_name)
    pod["metadata"]["name"] = f"filler-{node}"
    pod["metadata"]["labels"]["chaos-kind"] = "filler"
    spec = pod["spec"]
    spec["containers"][0]["resources"] = {"requests": dict(FILLER_REQUESTS)}
    spec["priorityClassName"] = LOW_PRIORITY
    spec["tolerations"] = [_toleration()]
    spec["nodeName"] = node
    return pod


def taint(node: JSON) -> list[JSON]:
    """The node's taints with the preemption taint added (for a merge patch of ``spec.taints``)."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != PREEMPTION_TAINT]
    return [*taints, {"key": PREEMPTION_TAINT, "value": "true", "effect": "NoSchedule"}]
