"""PVC-bearing pods, pure parts: manifests, a clock per claim, the phases of a pod's way to
Running and the placement check (each pod's volume pinned to the pod's node).

A pod with an unbound WaitForFirstConsumer claim goes through five steps, each timed from
the client's watches on pods, claims and volumes:

1. *scheduled*: the scheduler picks a node and, in PreBind, writes
   ``volume.kubernetes.io/selected-node`` on the claim (pod created -> annotation seen);
2. *handed over*: kube-controller-manager's PV controller sees the choice and hands the
   claim to its provisioner (``volume.kubernetes.io/storage-provisioner``);
3. *provisioned*: our provisioner creates the PV, pinned to the node (PV seen);
4. *volume bound*: the PV controller binds PV and claim (claim ``Bound``);
5. *pod bound*: the scheduler's PreBind, polling every second, sees the claim bound and the
   pod is bound (``spec.nodeName``).

Steps 1 and 5 are the scheduler's; 2-4 are the storage stack's, the same for both schedulers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bench.stats import PodClock, percentile
from bench.workload import pod_manifests
from secondary_scheduler.kube.client import JSON

STORAGE_CLASS = "local-wffc"
CLAIM_SIZES = ("1Gi", "1Gi", "2Gi", "5Gi")
HOSTNAME_KEY = "kubernetes.io/hostname"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
MOUNT_PATH = "/data"
PHASES = ("scheduled", "handed over", "provisioned", "volume bound", "pod bound")


def claim_manifests(
    names: Sequence[str], seed: int = 0, selected_nodes: Sequence[str] | None = None
) -> list[JSON]:
    """One ReadWriteOnce claim of ``local-wffc`` per name, 1-5Gi (the same seed, the same sizes).

    ``selected_nodes`` pre-sets ``volume.kubernetes.io/selected-node`` (round robin over the
    list), as if a scheduler had chosen: the storage stack alone provisions them, no pod needed.
    """
    rng = random.Random(seed)
    manifests = []
    for index, name in enumerate(names):
        metadata: JSON = {"name": name, "labels": {"app": "bench-volumes"}}
        if selected_nodes:
            metadata["annotations"] = {ANN_SELECTED_NODE: selected_nodes[index % len(selected_nodes)]}
        manifests.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": {
                    "storageClassName": STORAGE_CLASS,
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": rng.choice(CLAIM_SIZES)}},
                },
            }
        )
    return manifests


def volume_pod_manifests(prefix: str, count: int, scheduler_name: str, seed: int = 0) -> list[JSON]:
    """The throughput section's pods (same requests for the same seed), each mounting the claim
    of its own name."""
    manifests = pod_manifests(prefix, count, scheduler_name, seed)
    for manifest in manifests:
        name = manifest["metadata"]["name"]
        manifest["metadata"]["labels"]["app"] = "bench-volumes"
        spec = manifest["spec"]
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": MOUNT_PATH}]
    return manifests


def claim_of(pod: JSON) -> str | None:
    """The claim a pod mounts (the first persistentVolumeClaim volume), or None."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        source = volume.get("persistentVolumeClaim")
        if source and source.get("claimName"):
            return str(source["claimName"])
    return None


def pinned_nodes(volume: JSON) -> set[str] | None:
    """The nodes a PV's required node affinity admits by ``kubernetes.io/hostname In [...]``.

    None when the PV has no node affinity at all (it could be used anywhere). A term without a
    hostname ``In`` expression names no node here: this check is for node-local volumes.
    """
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return None
    nodes: set[str] = set()
    for term in terms:
        for expression in term.get("matchExpressions") or ():
            if expression.get("key") == HOSTNAME_KEY and expression.get("operator") == "In":
                nodes.update(str(value) for value in expression.get("values") or ())
    return nodes


@dataclass(frozen=True)
class Placement:
    """One pod after the run: where it is, and where its volume is."""

    pod: str
    node: str
    claim: str
    phase: str
    """The claim's phase ("missing" if there is no such claim)."""
    volume: str
    """The claim's ``spec.volumeName``."""
    volume_exists: bool
    volume_nodes: tuple[str, ...]
    selected_node: str

    @property
    def violation(self) -> str | None:
        """Why this placement is wrong, or None: the pod's volume must be pinned to its node."""
        if not self.node:
            return None  # not bound: counted as such, not as misplaced
        if self.phase != "Bound" or not self.volume:
            return f"pod {self.pod} on {self.node}: claim {self.claim} is {self.phase}, not Bound"
        if not self.volume_exists:
            return (
                f"pod {self.pod} on {self.node}: claim {self.claim} is bound to {self.volume}, "
                "which does not exist"
            )
        if self.node not in self.volume_nodes:
            where = ", ".join(self.volume_nodes) or "no node"
            return f"pod {self.pod} on {self.node}: its volume {self.volume} is pinned to {where}"
        return None


def placements(pods: Iterable[JSON], claims: Iterable[JSON], volumes: Iterable[JSON]) -> list[Placement]:
    """Each pod (that mounts a claim) with its node, its claim and the node(s) its PV is pinned to."""
    claims_by_name = {str(claim["metadata"]["name"]): claim for claim in claims}
    volumes_by_name = {str(volume["metadata"]["name"]): volume for volume in volumes}
    result = []
    for pod in pods:
        claim_name = claim_of(pod)
        if claim_name is None:
            continue
        claim = claims_by_name.get(claim_name)
        phase = "missing" if claim is None else str((claim.get("status") or {}).get("phase") or "Pending")
        volume_name = str(((claim or {}).get("spec") or {}).get("volumeName") or "")
        volume = volumes_by_name.get(volume_name)
        nodes = pinned_nodes(volume) if volume is not None else set()
        annotations = ((claim or {}).get("metadata") or {}).get("annotations") or {}
        result.append(
            Placement(
                pod=str(pod["metadata"]["name"]),
                node=str((pod.get("spec") or {}).get("nodeName") or ""),
                claim=claim_name,
                phase=phase,
                volume=volume_name,
                volume_exists=volume is not None,
                volume_nodes=tuple(sorted(nodes or ())),
                selected_node=str(annotations.get(ANN_SELECTED_NODE) or ""),
            )
        )
    return result


def violations(found: Iterable[Placement]) -> list[str]:
    return [text for text in (placement.violation for placement in found) if text]


class ClaimClock:
    """When each claim was first seen created, with a node chosen, handed over, with its PV, and Bound."""

    def __init__(self) -> None:
        self.created: dict[str, float] = {}
        self.selected: dict[str, float] = {}
        self.handed: dict[str, float] = {}
        self.provisioned: dict[str, float] = {}
        self.bound: dict[str, float] = {}

    def create_returned(self, name: str, at: float) -> None:
        """The create call for ``name`` returned (the watch may have shown it earlier)."""
        if name not in self.created or at < self.created[name]:
            self.created[name] = at

    def saw_claim(self, claim: JSON, at: float) -> None:
        """A watch event (ADDED or MODIFIED) for a claim."""
        metadata = claim.get("metadata") or {}
        name = str(metadata.get("name"))
        annotations = metadata.get("annotations") or {}
        self.create_returned(name, at)
        if annotations.get(ANN_SELECTED_NODE):
            self.selected.setdefault(name, at)
        if annotations.get(ANN_STORAGE_PROVISIONER):
            self.handed.setdefault(name, at)
        if (claim.get("status") or {}).get("phase") == "Bound":
            self.bound.setdefault(name, at)

    def saw_volume(self, volume: JSON, at: float, namespace: str) -> None:
        """A watch event for a PV: the first one bound to a claim of ``namespace`` marks it provisioned."""
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref.get("namespace") == namespace and ref.get("name"):
            self.provisioned.setdefault(str(ref["name"]), at)

    def bound_count(self, names: Iterable[str]) -> int:
        return sum(1 for name in names if name in self.bound)


def _spans(start: Mapping[str, float], end: Mapping[str, float], names: Iterable[str]) -> list[float]:
    return [max(0.0, end[name] - start[name]) for name in names if name in start and name in end]


@dataclass
class Phases:
    """Per phase, the p50 and p99 (seconds) over the pods that went through it, and two rates."""

    p50: dict[str, float] = field(default_factory=dict)
    p99: dict[str, float] = field(default_factory=dict)
    decided_rate: float = math.nan
    """Claims given a node per second (first pod created -> last choice seen): the scheduler's pace."""
    provisioned_rate: float = math.nan
    """Claims Bound per second (first choice seen -> last claim Bound): the storage stack's pace."""


def phases(pods: PodClock | None, claims: ClaimClock, names: Sequence[str]) -> Phases:
    """The five phases of ``names`` (pod name = claim name), from the two clocks.

    Without pods (the storage stack alone, claims created with a node chosen), the phases
    of the scheduler are left out and the storage stack's pace counts from the first claim.
    """
    empty: dict[str, float] = {}
    pod_created = pods.created if pods is not None else empty
    pod_bound = pods.bound if pods is not None else empty
    steps: list[tuple[str, Mapping[str, float], Mapping[str, float]]] = [
        ("scheduled", pod_created, claims.selected),
        ("handed over", claims.selected, claims.handed),
        ("provisioned", claims.handed, claims.provisioned),
        ("volume bound", claims.provisioned, claims.bound),
        ("pod bound", claims.bound, pod_bound),
    ]
    result = Phases()
    for name, start, end in steps:
        values = _spans(start, end, names)
        result.p50[name] = percentile(values, 0.50)
        result.p99[name] = percentile(values, 0.99)
    created = [pod_created[name] for name in names if name in pod_created]
    selected = [claims.selected[name] for name in names if name in claims.selected]
    bound = [claims.bound[name] for name in names if name in claims.bound]
    if created and selected and max(selected) > min(created):
        result.decided_rate = len(selected) / (max(selected) - min(created))
    claims_created = [claims.created[name] for name in names if name in claims.created]
    starts = selected if pods is not None else claims_created
    if starts and bound and max(bound) > min(starts):
        result.provisioned_rate = len(bound) / (max(bound) - min(starts))
    return result


def storage_rate(claims: ClaimClock, names: Sequence[str]) -> tuple[float, list[float]]:
    """For claims created with a node already chosen: claims Bound per second (first created ->
    last Bound) and each claim's time to Bound."""
    latencies = _spans(claims.created, claims.bound, names)
    created = [claims.created[name] for name in names if name in claims.created]
    bound = [claims.bound[name] for name in names if name in claims.bound]
    if not created or not bound or max(bound) <= min(created):
        return math.nan, latencies
    return len(bound) / (max(bound) - min(created)), latencies


def pace_setter(throughput: float, decided: float, storage_alone: Sequence[float]) -> str:
    """Who set a run's pace: "storage", "scheduler" or "both".

    The storage stack did when pods were bound at 80 % or more of the best it managed alone, or
    when claims queued behind it (nodes chosen over 1.25 times as fast as pods got bound) while
    the scheduler chose nodes at least as fast as the storage stack binds alone. The scheduler
    did when no claims queued. Both did when claims queued but the scheduler's own pace was
    below the storage stack's too.
    """
    alone = [rate for rate in storage_alone if not math.isnan(rate)]
    best = max(alone) if alone else math.nan
    queued = not math.isnan(decided) and decided > 1.25 * throughput
    if not math.isnan(best) and (throughput >= 0.8 * best or (queued and decided >= best)):
        return "storage"
    if not queued:
        return "scheduler"
    return "both" if not math.isnan(best) else "storage"


def _ms(seconds: float) -> str:
    return "–" if math.isnan(seconds) else f"{seconds * 1000:,.0f} ms"


def pace_sentence(
    label: str, throughput: float, found: Phases, cpu_ms_per_pod: float, storage_alone: Sequence[float]
) -> str:
    """One sentence on who set a scheduler's pace, with the numbers that show it."""
    alone = sorted(rate for rate in storage_alone if not math.isnan(rate))
    capacity = (
        "–" if not alone else f"{alone[0]:.1f}" if len(alone) == 1 else f"{alone[0]:.1f}-{alone[-1]:.1f}"
    )
    storage_steps = sum(
        found.p50.get(step, math.nan) for step in ("handed over", "provisioned", "volume bound")
    )
    scheduled = found.p50.get("scheduled", math.nan)
    rates = (
        f"**{label}** chose nodes at {found.decided_rate:.1f} claims/s and its pods were bound at "
        f"{throughput:.1f}/s (the storage stack alone binds {capacity} claims/s)"
    )
    medians = (
        f"median {_ms(scheduled)} from pod creation to node choice, {_ms(storage_steps)} from there to "
        "claim Bound"
    )
    setter = pace_setter(throughput, found.decided_rate, alone)
    if setter == "storage":
        return (
            f"{rates}: the storage stack set the pace, claims queued behind it ({medians}); the "
            "scheduler alone would go at least this fast."
        )
    if setter == "scheduler":
        return (
            f"{rates}: the scheduler set the pace, claims did not queue behind the storage stack "
            f"({medians}; {cpu_ms_per_pod:,.1f} ms of scheduler CPU per pod)."
        )
    return (
        f"{rates}: both limited it. The scheduler chose nodes more slowly than the storage stack binds "
        f"alone ({cpu_ms_per_pod:,.1f} ms of scheduler CPU per pod), and claims still queued behind the "
        f"storage stack, which shared the machine with the scheduler ({medians})."
    )
