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
6. measures the Events a kill -9 loses (`eventsprobe`), ``events_probe_repeats`` times.
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

from bench.chaos import faults, invariants, operator, workload
from bench.chaos.eventsprobe import EVENTS_NAMESPACE, EventsProbe, empty_namespace, events_probe
from bench.chaos.observe import BindingWatch, create_retrying, final_state, list_retrying
from bench.chaos.replicas import Election, Replicas, chaos_config
from bench.claims import claims_path
from bench.gang import podgroups_path
from bench.workload import pods_path
from bench.workloadclasses import nodes_of
from secondary_scheduler.kube.client import JSON, ApiClient
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster
from secsched_devtools.cluster.progress import console

NAMESPACE = "chaos"
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
    events_probe_repeats: int = 3
    """Probes per scheduler: one is noise (where a kill lands in a send is chance)."""
    operator: bool = True
    election: Election = field(default_factory=Election)

    def pace(self) -> float:
        """Seconds the burst is created over: every fault (about 12 s each with its gap) fits in it."""
        if self.duration is not None:
            return self.duration
        return max(30.0, len(self.kinds) * self.repeats * (12.0 + sum(self.gap) / 2))


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
    events: list[EventsProbe] = field(default_factory=list)
    without_event: int | None = None
    """Burst pods bound with no Scheduled Event in the final state (a leader killed with Events
    unwritten leaves them so, unless the next leader writes them)."""

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
            "events": [vars(probe) for probe in self.events],
            "without_event": self.without_event,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        """A result `to_json` wrote (``--from-json`` writes the doc again without running)."""
        events = data.get("events") or []
        if isinstance(events, dict):  # written before the probe was repeated
            events = [events]
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
            events=[EventsProbe.from_json(probe) for probe in events],
            without_event=data.get("without_event"),
        )


def run_scheduler(kind: str, options: ChaosOptions, directory: Path) -> RunResult:
    """The whole run of `kind` on a fresh cluster (stopped afterwards, whatever happens)."""
    directory.mkdir(parents=True, exist_ok=True)
    with LocalCluster(cluster_options(f"chaos-{kind}", options.nodes)) as cluster:
        return asyncio.run(_run(kind, options, cluster, directory))


def cluster_options(name: str, nodes: int) -> ClusterOptions:
    """A chaos cluster: KWOK nodes, Prometheus scraping every 5 s, no default scheduler."""
    return ClusterOptions(
        name=f"{name}-{os.getpid()}",
        nodes=nodes,
        default_scheduler=False,
        topology_exporter=False,
        scrape_interval="5s",
        node_lease_seconds=NODE_LEASE_SECONDS,
        control_plane_gogc=CONTROL_PLANE_GOGC,
    )


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
        without_event = len(invariants.events_lost(invariants.run_pods(state), state.events))
        seconds = time.monotonic() - started
        events = []
        probes = options.events_probe_repeats if options.events_probe_pods else 0
        for index in range(probes):
            namespace = f"{EVENTS_NAMESPACE}-{index + 1}"
            events.append(
                await events_probe(
                    kind,
                    cluster,
                    api,
                    backlog_pods=options.events_probe_pods,
                    share=options.events_probe_share,
                    seed=options.seed + index,
                    scheduler_name=SCHEDULER_NAME,
                    directory=directory,
                    namespace=namespace,
                    name=f"{kind}-events-probe-{index + 1}",
                )
            )
            console.print(f"{kind}: events probe {index + 1}: {events[-1].summary()}")
            await empty_namespace(api, namespace)
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
            without_event=without_event,
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
