"""One chaos run of one scheduler (ours or upstream's), on a local cluster of its own.

A run:

1. starts a cluster (KWOK nodes, Prometheus, the storage provisioner; no default scheduler),
   taints the few nodes kept for preemption and binds a low-priority filler on each;
2. installs deploy/ and runs the operator, until it has converged on the CR;
3. starts two replicas of the scheduler under leader election, kept running (`replicas`);
4. creates the burst (`workload`) at a steady pace over ``duration`` seconds, retrying through
   the API server's outages as a controller would, while `faults` are injected one after
   another at seeded random moments; its last 5 % only once the last fault is over, so that
   every fault has bindings to come after it;
5. waits until every pod is bound (or ``settle_timeout`` passes: a hang), stops the replicas
   (SIGTERM: they write what Events they hold) and checks the `invariants` on the final state;
6. measures the Events a kill -9 loses: a backlog of pods in a fresh namespace, one replica
   (no election) started on it and killed with SIGKILL once a share is bound; the bound pods
   with no Scheduled Event are what it lost.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.chaos import faults, invariants, operator, workload
from bench.chaos.observe import BindingWatch, final_state, list_retrying
from bench.chaos.replicas import Election, Replicas, chaos_config
from bench.claims import claims_path
from bench.gang import podgroups_path
from bench.workload import pod_manifests, pods_path
from bench.workloadclasses import nodes_of
from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster
from secsched_devtools.cluster.progress import console
from secsched_devtools.cluster.schedulers import start_scheduler

NAMESPACE = "chaos"
EVENTS_NAMESPACE = "chaos-events"
SCHEDULER_NAME = "chaos-scheduler"
CREATE_CONCURRENCY = 8
NODE_LEASE_SECONDS = 24 * 3600
"""As the benchmark's: at 1,000 nodes KWOK's lease renewals would be a steady load of writes."""
CONTROL_PLANE_GOGC = 400
"""As the benchmark's: fewer garbage collections in the control plane on a two-core machine."""


@dataclass(frozen=True)
class ChaosOptions:
    """The size and the faults of a run (``make chaos CHAOS_ARGS=...`` sets them)."""

    nodes: int = 1000
    pods: int = 2000
    kinds: tuple[str, ...] = faults.KINDS
    repeats: int = 3
    seed: int = 0
    gap: tuple[float, float] = (2.0, 8.0)
    """Seconds between one fault's end and the next one's start (uniform)."""
    duration: float | None = None
    """Seconds over which the burst is created; None: long enough for every fault (see `pace`)."""
    settle_timeout: float = 600.0
    events_probe_pods: int = 600
    """The kill -9 Events probe's backlog (0: no probe)."""
    events_probe_share: float = 0.4
    """The share of the backlog bound when the probe's replica is killed."""
    operator: bool = True
    election: Election = field(default_factory=Election)

    def pace(self) -> float:
        """Seconds the burst is created over: every fault (about 12 s each with its gap) fits in it."""
        if self.duration is not None:
            return self.duration
        return max(30.0, len(self.kinds) * self.repeats * (12.0 + sum(self.gap) / 2))


@dataclass
class EventsProbe:
    """A kill -9 under a backlog: how many pods were bound, how many of them have no Scheduled Event."""

    backlog: int
    bound: int
    lost: int
    examples: list[str]


@dataclass
class RunResult:
    """What one scheduler's run found."""

    scheduler: str
    nodes: int
    pods: int
    kinds: dict[str, int]
    faults: list[faults.FaultRecord]
    bound: int
    violations: list[str]
    recovery: dict[str, list[float | None]]
    restarts: int
    seconds: float
    events: EventsProbe | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler,
            "nodes": self.nodes,
            "pods": self.pods,
            "kinds": self.kinds,
            "faults": [vars(record) for record in self.faults],
            "bound": self.bound,
            "violations": self.violations,
            "recovery": self.recovery,
            "restarts": self.restarts,
            "seconds": self.seconds,
            "events": None if self.events is None else vars(self.events),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        """A result `to_json` wrote (``--from-json`` writes the doc again without running)."""
        events = data.get("events")
        return cls(
            scheduler=data["scheduler"],
            nodes=data["nodes"],
            pods=data["pods"],
            kinds=dict(data["kinds"]),
            faults=[faults.FaultRecord(**record) for record in data["faults"]],
            bound=data["bound"],
            violations=list(data["violations"]),
            recovery={kind: list(values) for kind, values in data["recovery"].items()},
            restarts=data["restarts"],
            seconds=data["seconds"],
            events=None if events is None else EventsProbe(**events),
        )


def run_scheduler(kind: str, options: ChaosOptions, directory: Path) -> RunResult:
    """The whole run of `kind` on a fresh cluster (stopped afterwards, whatever happens)."""
    directory.mkdir(parents=True, exist_ok=True)
    cluster_options = ClusterOptions(
        name=f"chaos-{kind}-{os.getpid()}",
        nodes=options.nodes,
        default_scheduler=False,
        topology_exporter=False,
        scrape_interval="5s",
        node_lease_seconds=NODE_LEASE_SECONDS,
        control_plane_gogc=CONTROL_PLANE_GOGC,
    )
    with LocalCluster(cluster_options) as cluster:
        return asyncio.run(_run(kind, options, cluster, directory))


async def _run(kind: str, options: ChaosOptions, cluster: LocalCluster, directory: Path) -> RunResult:
    started = time.monotonic()
    async with cluster.api() as api:
        await ensure_namespace(api, NAMESPACE)
        nodes = nodes_of(await list_retrying(api, "/api/v1/nodes"))
        burst = workload.build(nodes, options.pods, SCHEDULER_NAME, options.seed)
        await _prepare(api, burst)
        operator_process = None
        if options.operator:
            operator_process = operator.OperatorProcess(cluster.kubeconfig, directory)
            await operator.install(api, cluster.prometheus_url)
            operator_process.start()
            await wait_for(lambda: operator.converged(api), "the operator to converge on the CR", 120, 0.5)
        config = chaos_config(
            SCHEDULER_NAME, cluster.kubeconfig, cluster.prometheus_url, NAMESPACE, options.election
        )
        replicas = Replicas(kind, config, cluster.kubeconfig, directory)
        watch = BindingWatch(api, NAMESPACE)
        records: list[faults.FaultRecord] = []
        try:
            await replicas.start()
            await replicas.leader()
            watch.start()
            # The last pods wait for the last fault, so that every fault has bindings after it.
            tail = max(10, len(burst.pods) // 20)
            first, last = burst.pods[:-tail], burst.pods[-tail:]
            console.print(f"{kind}: creating {len(first)} pods over {options.pace():.0f}s, injecting faults")
            creating = asyncio.create_task(_create_paced(api, pods_path(NAMESPACE), first, options.pace()))
            injector = faults.FaultInjector(
                cluster, replicas, operator_process, api, random.Random(options.seed)
            )
            rng = random.Random(options.seed + 1)
            for fault in faults.plan(options.kinds, options.repeats, options.seed):
                await asyncio.sleep(rng.uniform(*options.gap))
                record = await injector.inject(fault)
                console.print(f"{kind}: {fault} ({record.detail}); {len(watch.bound)} pods bound so far")
                records.append(record)
            await creating
            console.print(f"{kind}: faults over; creating the last {len(last)} pods")
            await _create_paced(api, pods_path(NAMESPACE), last, 1.0)
            expected = set(burst.names)
            try:
                await wait_for(
                    lambda: _all_bound(watch, expected), "every pod bound", options.settle_timeout, 1.0
                )
            except TimeoutError:
                console.print(f"[red]{kind}: not every pod bound after {options.settle_timeout:.0f}s[/red]")
        finally:
            await replicas.stop()
            await watch.stop()
            if operator_process is not None:
                operator_process.stop()
        state = await final_state(api, NAMESPACE, burst)
        violations = invariants.check(state) + [r.violation for r in records if r.violation]
        recovery = invariants.recovery(
            [(r.kind, r.ended, r.in_flight) for r in records], watch.bound.values()
        )
        bound = sum(1 for pod in invariants.run_pods(state) if (pod.get("spec") or {}).get("nodeName"))
        seconds = time.monotonic() - started
        events = None
        if options.events_probe_pods:
            events = await events_probe(kind, cluster, api, options, directory)
        return RunResult(
            scheduler=kind,
            nodes=len(nodes),
            pods=len(burst.pods),
            kinds=burst.counts(),
            faults=records,
            bound=bound,
            violations=violations,
            recovery={key: list(values) for key, values in recovery.seconds.items()},
            restarts=replicas.restarts(),
            seconds=seconds,
            events=events,
        )


async def _all_bound(watch: BindingWatch, expected: set[str]) -> bool:
    return expected <= watch.bound.keys()


async def _prepare(api: ApiClient, burst: workload.Workload) -> None:
    """Taints, priority classes, PodGroups, claims and the fillers, before the first pod comes."""
    for name in burst.tainted_nodes:
        node = await api.get(f"/api/v1/nodes/{name}")
        await api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": workload.taint(node)}})
    for priority_class in burst.priority_classes:
        await api.apply(priority_class, operator.FIELD_MANAGER)
    for group in burst.podgroups:
        await api.create(podgroups_path(NAMESPACE), group)
    for claim in burst.claims:
        await api.create(claims_path(NAMESPACE), claim)
    for filler in burst.fillers:
        await api.create(pods_path(NAMESPACE), filler)


async def create_retrying(api: ApiClient, path: str, manifest: JSON) -> None:
    """Create one object through API server outages, as a controller would: an AlreadyExists after
    a lost answer means the first try went through."""
    while True:
        try:
            await api.create(path, manifest)
            return
        except ApiError as error:
            if error.status == 409:
                return
            if error.status < 500 and error.status != 429:
                raise
        except ApiUnavailable:
            pass
        await asyncio.sleep(0.5)


async def _create_paced(api: ApiClient, path: str, manifests: Sequence[JSON], seconds: float) -> None:
    """Create the objects in order, the i-th not before ``i * seconds / n`` after the start."""
    start = time.monotonic()
    interval = seconds / max(1, len(manifests))
    pending = iter(enumerate(manifests))

    async def worker() -> None:
        for index, manifest in pending:
            delay = start + index * interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await create_retrying(api, path, manifest)

    await asyncio.gather(*(worker() for _ in range(CREATE_CONCURRENCY)))


async def events_probe(
    kind: str, cluster: LocalCluster, api: ApiClient, options: ChaosOptions, directory: Path
) -> EventsProbe:
    """kill -9 one replica (no election) once a share of a backlog is bound; count the bound pods
    left without a Scheduled Event."""
    await ensure_namespace(api, EVENTS_NAMESPACE)
    document = yaml.safe_load(
        chaos_config(
            SCHEDULER_NAME, cluster.kubeconfig, cluster.prometheus_url, EVENTS_NAMESPACE, options.election
        )
    )
    document["leaderElection"] = {"leaderElect": False}
    backlog = pod_manifests("backlog", options.events_probe_pods, SCHEDULER_NAME, options.seed)
    path = pods_path(EVENTS_NAMESPACE)
    await asyncio.gather(*(create_retrying(api, path, pod) for pod in backlog))
    watch = BindingWatch(api, EVENTS_NAMESPACE)
    watch.start()
    run = await asyncio.to_thread(
        start_scheduler, kind, yaml.safe_dump(document), cluster.kubeconfig, directory, f"{kind}-events-probe"
    )
    try:
        share = int(options.events_probe_pods * options.events_probe_share)
        await wait_for(lambda: _bound_at_least(watch, share), f"{share} backlog pods bound", 300, 0.05)
        run.process.kill()
        run.process.wait()
    finally:
        run.stop()
        await watch.stop()
    pods = await list_retrying(api, path)
    events = await list_retrying(api, f"/apis/events.k8s.io/v1/namespaces/{EVENTS_NAMESPACE}/events")
    lost = invariants.events_lost(pods, events)
    bound = sum(1 for pod in pods if (pod.get("spec") or {}).get("nodeName"))
    return EventsProbe(backlog=len(backlog), bound=bound, lost=len(lost), examples=lost[:5])


async def _bound_at_least(watch: BindingWatch, count: int) -> bool:
    return len(watch.bound) >= count
