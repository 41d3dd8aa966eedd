"""What must hold after a chaos run, read from the cluster's final state and its Events (pure).

Each check returns one line per violation, ``rule: what``, so that a report can count them by
rule and print the first few. The placement rules a scheduler keeps on its own (allocatable,
required anti-affinity, DoNotSchedule spread, node affinity) are the benchmark's placement check
(`bench.workloadclasses.check_placement`), the volumes' and the gangs' are the benchmark's too;
what is new here is what only faults can break: a pod bound twice, a pod left pending for good,
a victim evicted for a preemptor that then went nowhere, a pod on a node whose taint it does not
tolerate, and the recovery after each fault.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bench import storage
from bench.gang import partial_gangs
from bench.stats import percentile
from bench.workloadclasses import check_placement
from secondary_scheduler.framework.taints import DO_NOT_SCHEDULE_EFFECTS, Taint, Toleration, tolerated
from secondary_scheduler.kube.client import JSON

SCHEDULED = "Scheduled"
PREEMPTED = "Preempted"
PREEMPTED_BY = re.compile(r"Preempted by pod (?P<uid>\S+) on node (?P<node>\S+)")
"""The victim's Event, in both schedulers' words (upstream's preemption.go, ours' framework/preemption)."""


@dataclass
class FinalState:
    """The cluster after a run: everything the invariants read, as the API listed it."""

    pods: list[JSON]
    """Every pod of every namespace (a node's allocatable is shared by all of them)."""
    nodes: list[JSON]
    claims: list[JSON]
    volumes: list[JSON]
    events: list[JSON]
    """The run namespace's events.k8s.io/v1 Events."""
    namespace: str
    expected: list[str]
    """The workload's pods, each of which fits and so must end bound unless preempted."""
    fillers: list[str]
    """The low-priority pods bound before the run, which only preemption may remove."""
    gangs: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """PodGroup -> its pods (minMember is the gang's size)."""


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _node_name(pod: JSON) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def run_pods(state: FinalState) -> list[JSON]:
    return [pod for pod in state.pods if (pod.get("metadata") or {}).get("namespace") == state.namespace]


def scheduled_events(events: Iterable[JSON]) -> dict[str, list[JSON]]:
    """Pod name -> its Scheduled Events (reason ``Scheduled``, regarding a Pod)."""
    found: dict[str, list[JSON]] = defaultdict(list)
    for event in events:
        regarding = event.get("regarding") or {}
        if event.get("reason") == SCHEDULED and regarding.get("kind") == "Pod":
            found[str(regarding.get("name"))].append(event)
    return found


def unbound(state: FinalState) -> list[str]:
    """Every workload pod fits, so each must end bound; a victim of preemption may be gone."""
    by_name = {_name(pod): pod for pod in run_pods(state)}
    found = []
    for name in state.expected:
        pod = by_name.get(name)
        if pod is None:
            found.append(f"bound: {name} is gone (nothing but preemption deletes a pod here)")
        elif not _node_name(pod):
            found.append(f"bound: {name} never bound")
    return found


def bound_twice(events: Iterable[JSON]) -> list[str]:
    """A pod with two Scheduled Events was bound twice, or by two replicas each believing it did."""
    found = []
    for pod, seen in sorted(scheduled_events(events).items()):
        uids = Counter(str((event.get("regarding") or {}).get("uid")) for event in seen)
        for uid, count in uids.items():
            if count > 1:
                reporters = sorted({str(event.get("reportingInstance")) for event in seen})
                found.append(f"bound once: {pod} ({uid}) has {count} Scheduled Events, from {reporters}")
    return found


def untolerated(pods: Iterable[JSON], nodes: Iterable[JSON]) -> list[str]:
    """No pod on a node with a NoSchedule/NoExecute taint it does not tolerate (what the bench's
    placement check leaves out: its nodes have no taints); the scheduler's own matching rule."""
    taints = {
        _name(node): [Taint.parse(raw) for raw in (node.get("spec") or {}).get("taints") or []]
        for node in nodes
    }
    found = []
    for pod in pods:
        node = _node_name(pod)
        tolerations = [Toleration.parse(raw) for raw in (pod.get("spec") or {}).get("tolerations") or []]
        for taint in taints.get(node, []):
            if taint.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerated(taint, tolerations):
                found.append(
                    f"taints: {_name(pod)} is on {node}, whose taint {taint.key} it does not tolerate"
                )
    return found


def preemptions(state: FinalState) -> list[str]:
    """No victim evicted without its preemptor bound or nominated: each Preempted Event's preemptor,
    and each filler gone, must have a pod bound to or nominated for that node."""
    pods = run_pods(state)
    by_uid = {str(pod["metadata"].get("uid")): pod for pod in pods}
    claimed: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        for node in (_node_name(pod), str((pod.get("status") or {}).get("nominatedNodeName") or "")):
            if node:
                claimed[node].add(_name(pod))
    found = []
    for event in state.events:
        if event.get("reason") != PREEMPTED:
            continue
        match = PREEMPTED_BY.search(str(event.get("note") or event.get("message") or ""))
        victim = str((event.get("regarding") or {}).get("name"))
        if match is None:
            found.append(f"preemption: {victim}'s Preempted Event names no preemptor: {event.get('note')!r}")
            continue
        preemptor = by_uid.get(match["uid"])
        node = match["node"]
        if preemptor is None:
            found.append(f"preemption: {victim} was evicted for pod {match['uid']}, which is gone")
        elif (
            _node_name(preemptor) != node and (preemptor.get("status") or {}).get("nominatedNodeName") != node
        ):
            found.append(
                f"preemption: {victim} was evicted from {node} for {_name(preemptor)}, which is neither "
                f"bound nor nominated there (bound to {_node_name(preemptor) or 'nothing'})"
            )
    present = {_name(pod) for pod in pods}
    filler_nodes = _filler_nodes(state)
    for filler in state.fillers:
        if filler in present:
            continue
        node = filler_nodes.get(filler, "")
        if not (claimed.get(node, set()) - set(state.fillers)):
            found.append(
                f"preemption: filler {filler} on {node} is gone, and no pod is bound to or nominated for it"
            )
    return found


def _filler_nodes(state: FinalState) -> dict[str, str]:
    """Where each filler was placed: its name ends in its node's (``filler-<node>``)."""
    return {filler: filler.removeprefix("filler-") for filler in state.fillers}


def check(state: FinalState) -> list[str]:
    """Every invariant on the final state; one line per violation, ``rule: what``."""
    pods = run_pods(state)
    bound_pods = [pod for pod in state.pods if _node_name(pod)]
    found: list[str] = []
    found += unbound(state)
    found += bound_twice(state.events)
    found += check_placement(bound_pods, state.nodes)
    found += untolerated(pods, state.nodes)
    found += [
        f"volumes: {text}"
        for text in storage.violations(storage.placements(pods, state.claims, state.volumes))
    ]
    found += [f"gangs: {text}" for text in partial_gangs(pods, state.gangs)]
    found += preemptions(state)
    return found


def by_rule(violations: Iterable[str]) -> dict[str, int]:
    """How many violations of each rule (the text before the first colon)."""
    return dict(Counter(text.split(":", 1)[0] for text in violations))


def events_lost(pods: Iterable[JSON], events: Iterable[JSON]) -> list[str]:
    """The bound pods with no Scheduled Event: what an admin's ``kubectl describe`` shows nothing for."""
    scheduled = scheduled_events(events)
    return sorted(_name(pod) for pod in pods if _node_name(pod) and _name(pod) not in scheduled)


# -- recovery -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recovery:
    """Seconds from each fault's end to the next binding, by fault kind (None: no binding came)."""

    seconds: Mapping[str, Sequence[float | None]]

    def summary(self, kind: str) -> tuple[int, float, float, int]:
        """(faults, p50, max, faults with no binding after them) of one kind."""
        values = self.seconds.get(kind, ())
        measured = [value for value in values if value is not None]
        highest = max(measured) if measured else float("nan")
        return len(values), percentile(measured, 0.5), highest, len(values) - len(measured)


def recovery(faults: Iterable[tuple[str, float, float]], bindings: Iterable[float]) -> Recovery:
    """``faults``: (kind, end time, seconds after the end whose bindings do not count: in flight
    before the fault); ``bindings``: when each binding was seen, on the same clock."""
    ordered = sorted(bindings)
    seconds: dict[str, list[float | None]] = defaultdict(list)
    for kind, end, in_flight in faults:
        index = bisect.bisect_left(ordered, end + in_flight)
        seconds[kind].append(ordered[index] - end if index < len(ordered) else None)
    return Recovery(dict(seconds))
