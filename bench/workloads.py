"""Workload classes: ours against the upstream kube-scheduler on scheduler_perf's kinds of pods.

The throughput section measures pods that ask for CPU and memory only. This section measures
the classes of kube-scheduler's scheduler_perf suite (``bench.workloadclasses``: pod
anti-affinity, pod affinity, preferred terms, node affinity, topology spreading, a stream with
unschedulable pods, preemption, PVC-bearing pods), and the basic pods under seed 000's
load-aware profile (Trimaran's TargetLoadPacking on Prometheus) and under the same profile with
LoadVariationRiskBalancing in TargetLoadPacking's place, with the throughput section's method:
the same cluster per size, the same one-profile configuration and client limits for both
schedulers, a fresh scheduler process per run.

For each size and class:

1. the class's pre-existing pods are created once, already bound (``spec.nodeName`` chosen by
   the benchmark so that they keep the class's own constraints), as scheduler_perf's
   ``createPods`` init step; both schedulers' runs share them;
2. each scheduler runs once (``--workload-repeats``), the one going first alternating class by
   class. A run waits until the machine has settled, starts the scheduler, schedules a few
   warm-up pods, creates the measured pods as fast as the client can (bounded concurrency)
   while a watch notes when each was created and first seen bound, then lists every pod of
   the namespace and the nodes and checks every bound pod against its hard constraints;
3. then each scheduler runs once more in open loop: fewer pods, created on a fixed schedule
   (pod i at t0 + i / rate) at the same rate for both, a share of the lower of the two
   saturation throughputs, so that latency is measured below either one's capacity;
4. between runs only the measured (and warm-up) pods are deleted, and the preemption class's
   victims are created again where they were; after the class, every pod and the namespace.

The cluster runs without Prometheus, so that no measurement pays for scraping thousands of
nodes; each load class (``load-aware``, ``load-variation``) starts Prometheus and the node-load
exporter before its runs (each node at a fixed load, ``starting_load``) and stops them after,
both schedulers reading the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import storage
from bench.context import BenchContext, BenchOptions
from bench.machine import component_versions, load_average
from bench.profiles import Profile, Recorder
from bench.report import milliseconds, number, table
from bench.sections import RunInfo
from bench.stats import PodClock, RunMeasures, percentile, ratio
from bench.throughput import (
    LABELS,
    SCHEDULER_NAME,
    ThroughputSection,
    _keep_metrics,
    bench_config,
    cpu_seconds,
)
from bench.volumes import PVS, VolumesSection, claims_path, create_objects, delete_claims
from bench.workload import (
    JSON,
    PodWatch,
    _delete_each,
    create_pods,
    delete_all_pods,
    pod_manifests,
    pods_path,
)
from bench.workloadclasses import (
    BY_NAME,
    CLASS_NAMES,
    EXISTING,
    LOAD_AWARE,
    LOAD_CLASSES,
    LOAD_LEVELS,
    LOAD_VARIATION,
    RISK_THRESHOLD,
    ROLE_LABEL,
    TARGET_LOAD_PACKING,
    check_placement,
    existing_count,
    existing_manifests,
    expected_unschedulable,
    load_class_config,
    load_outcome,
    load_rule,
    measured_manifests,
    nodes_of,
    priority_classes,
    room,
    rules_broken,
    starting_load,
    zones_of,
)
from secondary_scheduler.cluster.localcluster import ClusterError
from secondary_scheduler.cluster.progress import step
from secondary_scheduler.cluster.schedulers import OURS, UPSTREAM, start_scheduler
from secondary_scheduler.demo.main import example_config
from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.namespaces import ensure_namespace

SATURATION = "saturation"
OPEN_LOOP = "open-loop"
KEPT_VIOLATIONS = 20
"""Violations kept per run (all are counted)."""
METRICS_SETTLE = 1.0
"""Seconds to wait before reading the scheduler's counters: kube-scheduler counts an attempt after
its binding returns, which the benchmark's watch can see first."""
PVC_PODS = 200
PVC_OPEN_LOOP_PODS = 60
"""The pvc class measures at most these many pods: upstream's VolumeBinding spends about half a
second of CPU per pod at 1,000 nodes (the volumes section), more with more nodes, so the class at
full size would take most of the section's hour by itself."""
LOAD_SCRAPE_INTERVAL = "15s"
"""Prometheus' scrape interval while a load class runs (its own default). At 5,000 nodes
a scrape is 10,000 series, about 0.12 s of the exporter's CPU: under 1 % of a core at this
interval, which still gives the schedulers' collectors (every 30 s) a fresh sample each time."""


@dataclass(kw_only=True)
class WorkloadRecord(RunMeasures):
    """One scheduler's one run of one class at one size."""

    klass: str
    mode: str
    """``saturation`` (pods created as fast as the client can) or ``open-loop`` (at ``rate``)."""
    existing: int
    rate: float = math.nan
    """The open-loop arrival rate asked for (pods/s)."""
    schedule_lag: float = math.nan
    """Open loop: the most a pod's create call started after its due time (seconds)."""
    unschedulable: int = 0
    """Pods of the stream that fit nowhere (the churn class), left pending; ``pods`` counts the others."""
    victims: int = 0
    """Pre-existing pods gone at the end of the run (the preemption class's victims)."""
    violation_count: int = 0
    violations: list[str] = field(default_factory=list)
    """The first few placement violations (``rule: what``)."""
    profile: Profile | None = None
    """Where our scheduler's time went (with ``--profile``; open loop with ``--profile-open-loop``)."""
    over_target: int | None = None
    """The load classes: bound measured pods on nodes whose CPU load ends above the class's
    threshold (TargetLoadPacking's target; for LoadVariationRiskBalancing, mean + margin x stddev
    over ``RISK_THRESHOLD``: ``workloadclasses.load_outcome``); a soft measure, not a violation."""
    hot_start: int | None = None
    """Of those, the pods on nodes above the threshold before any measured pod came."""
    latencies: list[float] = field(default_factory=list)
    """Open loop: each bound measured pod's latency (seconds), pooled over a scheduler's runs."""

    @property
    def machine_busy(self) -> float:
        """CPUs every process measured (control plane, KWOK, client, scheduler) kept busy over the
        span: near the machine's count, latency measures the machine's queue, not the scheduler."""
        if not self.cpu_seconds or not self.span or math.isnan(self.span):
            return math.nan
        return sum(self.cpu_seconds.values()) / self.span


@dataclass
class Skipped:
    nodes: int
    klass: str
    reason: str


def open_loop_rule(options: BenchOptions) -> str:
    """How the open-loop rate was chosen, in words, as both the section's intro and its method say it."""
    ceiling = f" and at most {options.open_loop_max_rate:g} pods/s" if options.open_loop_max_rate else ""
    return f"{options.open_loop_fraction:g} × the lower of the two saturation throughputs{ceiling}"


def open_loop_rate(saturation: Iterable[float], fraction: float, ceiling: float = math.inf) -> int | None:
    """``fraction`` of the lowest saturation throughput, rounded down, at most ``ceiling``, at least 1
    (None without one)."""
    values = [value for value in saturation if not math.isnan(value) and value > 0]
    if not values:
        return None
    return max(1, math.floor(min(fraction * min(values), ceiling)))


async def create_on_schedule(
    api: ApiClient,
    namespace: str,
    manifests: Sequence[JSON],
    clock: PodClock,
    rate: float,
    in_flight: int,
    on_created: Callable[[], None] | None = None,
) -> float:
    """Create pod i at t0 + i / rate, each without waiting for the previous one (at most
    ``in_flight`` at once); returns the most a create started after its due time (seconds)."""
    path = pods_path(namespace)
    gate = asyncio.Semaphore(max(1, in_flight))
    tasks: list[asyncio.Task[None]] = []
    lag = 0.0

    async def create(manifest: JSON) -> None:
        try:
            await api.create(path, manifest)
            clock.create_returned(manifest["metadata"]["name"], time.monotonic())
            if on_created is not None:
                on_created()
        finally:
            gate.release()

    start = time.monotonic()
    try:
        for index, manifest in enumerate(manifests):
            due = start + index / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await gate.acquire()
            lag = max(lag, time.monotonic() - due)
            tasks.append(asyncio.create_task(create(manifest)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    return lag


RESTORE_SETTLE_SECONDS = 3.0
"""How long the restored pre-existing pods must all stay there before a run may start."""


async def delete_pods(
    api: ApiClient, namespace: str, selector: str, concurrency: int, timeout: float = 600.0
) -> None:
    """Delete the namespace's pods that ``selector`` selects (no grace period) until none is left."""
    path = pods_path(namespace)
    deadline = time.monotonic() + timeout
    while True:
        listed = (await api.list_all(path, {"labelSelector": selector}))["items"]
        names = [item["metadata"]["name"] for item in listed]
        if not names:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{len(names)} pods ({selector}) in {namespace} still there after {timeout:.0f}s"
            )
        await _delete_each(api, path, names, concurrency)


async def restore_existing(
    api: ApiClient,
    namespace: str,
    existing: Sequence[JSON],
    concurrency: int,
    timeout: float = 600.0,
    settle: float = RESTORE_SETTLE_SECONDS,
) -> int:
    """Create again the pre-existing pods that are gone (where they were); returns how many.

    Done once every one is there, none terminating, both now and ``settle`` seconds later: KWOK
    deletes a terminating pod by name and retries, so a late retry can remove the pod just
    created in its place (four victims so vanished before a preemption run on 2026-11-26, which
    then started with four free nodes).
    """
    path = pods_path(namespace)
    deadline = time.monotonic() + timeout
    restored = 0
    settling = False
    while True:
        listed = (await api.list_all(path, {"labelSelector": f"{ROLE_LABEL}={EXISTING}"}))["items"]
        present = {item["metadata"]["name"] for item in listed}
        terminating = [item for item in listed if item["metadata"].get("deletionTimestamp")]
        missing = [pod for pod in existing if pod["metadata"]["name"] not in present]
        if not missing and not terminating:
            if settling:
                return restored
            settling = True
            await asyncio.sleep(settle)
            continue
        settling = False
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{len(missing)} pre-existing pods of {namespace} not restored after {timeout:.0f}s "
                f"({len(terminating)} still terminating)"
            )
        restored += await _create_missing(api, path, missing, concurrency)
        if terminating:
            await asyncio.sleep(0.5)


async def _create_missing(api: ApiClient, path: str, manifests: Sequence[JSON], concurrency: int) -> int:
    """Create the objects (one already there is fine); returns how many were created."""
    pending = iter(manifests)
    created = 0

    async def worker() -> None:
        nonlocal created
        for manifest in pending:
            try:
                await api.create(path, manifest)
                created += 1
            except ApiError as error:
                if not error.conflict:
                    raise

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return created


# -- the section ------------------------------------------------------------------------------
class WorkloadsSection:
    name = "workloads"
    title = "Workload classes"

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records: list[WorkloadRecord] = []
        self.skipped: list[Skipped] = []
        self.versions: dict[str, str] = {}
        self._throughput = ThroughputSection(options)
        """For its ``_wait_bound`` (the same stall rule)."""

    # -- measuring ---------------------------------------------------------------------------
    async def measure(self, context: BenchContext) -> None:
        options = self.options
        if context.nodes not in options.workload_sizes:
            return
        self.versions = component_versions()
        node_objects = (await context.api.list_all("/api/v1/nodes"))["items"]
        for manifest in priority_classes():
            with contextlib.suppress(ApiError):
                await context.api.create("/apis/scheduling.k8s.io/v1/priorityclasses", manifest)
        position = 0
        for index, klass in enumerate(options.workload_classes):
            position = await self._class(context, node_objects, index, klass, position)

    def _save(self) -> None:
        raw = {
            "runs": [asdict(record) for record in self.records],
            "skipped": [asdict(item) for item in self.skipped],
            "versions": self.versions,
        }
        (self.options.workdir / "workloads.json").write_text(json.dumps(raw, indent=1))

    async def _class(
        self, context: BenchContext, node_objects: Sequence[JSON], index: int, klass: str, position: int
    ) -> int:
        options = self.options
        nodes = nodes_of(node_objects)
        measured = options.workload_pods_for(context.nodes)
        open_loop_pods = options.open_loop_pods
        if klass == "pvc":
            measured, open_loop_pods = min(measured, PVC_PODS), min(open_loop_pods, PVC_OPEN_LOOP_PODS)
        existing = existing_count(klass, options.workload_existing_for(context.nodes), len(nodes))
        problem = room(klass, len(nodes), existing, measured)
        if problem is None and options.open_loop:
            problem = room(klass, len(nodes), existing, open_loop_pods)
        node_load: dict[str, Any] | None = None
        idle = context.idle_cpus
        if problem is None and klass in LOAD_CLASSES:
            node_load = starting_load(nodes, seed=context.nodes)
            try:
                await self._start_load_metrics(context, klass, node_load)
            except ClusterError as error:
                problem = f"Prometheus and the node-load exporter did not start: {error}"
        if problem is not None:
            context.log(f"    [yellow]{klass}: skipped at {context.nodes:,} nodes: {problem}[/yellow]")
            self.skipped.append(Skipped(context.nodes, klass, problem))
            self._save()
            return position
        try:
            return await self._measure_class(
                context, node_objects, index, klass, position, (existing, measured, open_loop_pods), node_load
            )
        finally:
            if node_load is not None:
                with step(f"{context.nodes:,} nodes · {klass} · stopping Prometheus and the load exporter"):
                    await asyncio.to_thread(context.cluster.stop_load_metrics)
                context.idle_cpus = idle

    @staticmethod
    async def _start_load_metrics(context: BenchContext, klass: str, node_load: dict[str, Any]) -> None:
        """Prometheus and the node-load exporter for a load class, then the idle machine measured
        again with them (what its runs wait for before starting)."""
        await asyncio.to_thread(
            context.cluster.start_load_metrics, context.nodes, node_load, LOAD_SCRAPE_INTERVAL
        )
        busy = await context.measure_idle()
        context.log(
            f"    {klass}: Prometheus scrapes {context.nodes:,} nodes' load every "
            f"{LOAD_SCRAPE_INTERVAL}; the idle cluster with it: {busy:.2f} CPUs busy"
        )

    async def _measure_class(
        self,
        context: BenchContext,
        node_objects: Sequence[JSON],
        index: int,
        klass: str,
        position: int,
        counts: tuple[int, int, int],
        node_load: dict[str, Any] | None,
    ) -> int:
        """The class's pre-existing pods, its runs, then its clean-up; ``counts``: (pre-existing,
        measured, open-loop) pods."""
        options = self.options
        api = context.api
        nodes = nodes_of(node_objects)
        existing, measured, open_loop_pods = counts
        if klass == "pvc":
            with step(f"{context.nodes:,} nodes · every node's CSINode and CSIStorageCapacity", log_every=10):
                await VolumesSection._wait_published(context)
        namespace = f"bench-wl-{context.nodes}-{klass}"
        await ensure_namespace(api, namespace)
        existing_pods = existing_manifests(klass, existing, nodes, SCHEDULER_NAME, seed=context.nodes)
        with step(f"{context.nodes:,} nodes · {klass} · {existing:,} pre-existing pods, bound", log_every=5):
            await create_pods(api, namespace, existing_pods, PodClock(), options.concurrency)
        order = (UPSTREAM, OURS) if index % 2 == 0 else (OURS, UPSTREAM)
        setting = (context, namespace, node_objects, klass, order, existing_pods, node_load)
        try:
            position = await self._abba(*setting, SATURATION, options.workload_repeats, measured, position)
            if options.open_loop:
                rate = self.open_loop_rate(context.nodes, klass)
                if rate is None:
                    context.log(f"    [red]{klass}: no open-loop runs: a saturation run bound nothing[/red]")
                else:
                    repeats = options.open_loop_repeats
                    position = await self._abba(*setting, OPEN_LOOP, repeats, open_loop_pods, position, rate)
        finally:
            with step(f"{context.nodes:,} nodes · {klass} · deleting its pods and namespace", log_every=5):
                await delete_all_pods(api, namespace, options.concurrency)
                with contextlib.suppress(ApiError):
                    await api.delete(f"/api/v1/namespaces/{namespace}")
        return position

    async def _abba(
        self,
        context: BenchContext,
        namespace: str,
        node_objects: Sequence[JSON],
        klass: str,
        order: tuple[str, str],
        existing_pods: Sequence[JSON],
        node_load: dict[str, Any] | None,
        mode: str,
        repeats: int,
        count: int,
        position: int,
        rate: float = math.nan,
    ) -> int:
        """``repeats`` runs of each scheduler in ``mode``, in ABBA order; returns the last position."""
        for repeat in range(repeats):
            for kind in order if repeat % 2 == 0 else order[::-1]:
                position += 1
                record = await self._run(
                    context,
                    namespace,
                    node_objects,
                    klass,
                    kind,
                    mode,
                    repeat,
                    position,
                    count,
                    existing_pods,
                    rate,
                    node_load=node_load,
                )
                self.records.append(record)
                self._save()
        return position

    def open_loop_rate(self, nodes: int, klass: str) -> int | None:
        best = [self.best(nodes, klass, kind, SATURATION) for kind in (OURS, UPSTREAM)]
        if any(record is None for record in best):
            return None
        return open_loop_rate(
            (record.throughput for record in best if record is not None),
            self.options.open_loop_fraction,
            self.options.open_loop_max_rate or math.inf,
        )

    async def _run(
        self,
        context: BenchContext,
        namespace: str,
        node_objects: Sequence[JSON],
        klass: str,
        kind: str,
        mode: str,
        repeat: int,
        position: int,
        count: int,
        existing: Sequence[JSON],
        rate: float = math.nan,
        *,
        node_load: dict[str, Any] | None = None,
    ) -> WorkloadRecord:
        """One run; ``node_load``: a load class's node loads (its profile, and where its pods went
        against its plugin's threshold)."""
        options = self.options
        api = context.api
        nodes = nodes_of(node_objects)
        zones = zones_of(nodes)
        prefix = f"{LABELS[kind][0]}{position}"
        seed = context.nodes * 1000 + CLASS_NAMES.index(klass) * 10 + (mode == OPEN_LOOP)
        manifests = measured_manifests(klass, prefix, count, SCHEDULER_NAME, zones, seed)
        targets = [m["metadata"]["name"] for m in manifests if not expected_unschedulable(m)]
        warm = pod_manifests(f"{prefix}-warm", options.warmup_pods, SCHEDULER_NAME, seed=1)
        config = self._config(context, klass)
        directory = options.workdir / f"workloads-{context.nodes}"
        at = f" at {rate:g}/s" if mode == OPEN_LOOP else ""
        label = (
            f"{context.nodes:,} nodes · {klass} · {mode} · {LABELS[kind]} · run {position} "
            f"({count:,} pods{at}, {len(existing):,} pre-existing)"
        )
        with step(label, log_every=5.0) as progress:
            if klass == "pvc":
                progress.update(f"creating {count} claims")
                names = [m["metadata"]["name"] for m in manifests]
                claims = storage.claim_manifests(names, seed=seed)
                await create_objects(api, claims_path(namespace), claims, options.concurrency)
            busy = await context.wait_quiet(progress.update)
            load = load_average()
            progress.update("starting the scheduler")
            scheduler = await asyncio.to_thread(
                start_scheduler, kind, config, context.cluster.kubeconfig, directory, f"{prefix}-{kind}"
            )
            clock = PodClock()
            watch = PodWatch(api, namespace, clock)
            listed_claims: list[JSON] = []
            listed_volumes: list[JSON] = []
            try:
                await watch.start()
                progress.update("warming up")
                await create_pods(api, namespace, warm, clock, options.concurrency)
                await self._throughput._wait_bound(
                    clock, watch, {m["metadata"]["name"] for m in warm}, progress.update
                )
                await asyncio.sleep(METRICS_SETTLE)
                page = f"{prefix}-{klass}-{mode}.metrics"
                before_metrics = await asyncio.to_thread(
                    _keep_metrics, scheduler, directory / f"{page}-before.txt"
                )
                before_cpu = cpu_seconds(context, scheduler)
                created = [0]

                def counted() -> None:
                    created[0] += 1

                lags: list[float] = []

                async def on_schedule() -> None:
                    lags.append(
                        await create_on_schedule(
                            api, namespace, manifests, clock, rate, options.concurrency, counted
                        )
                    )

                recorder = None
                if options.profile and kind == OURS and (mode == SATURATION or options.profile_open_loop):
                    recorder = Recorder(
                        scheduler.process.pid, directory / f"{prefix}-{klass}-{mode}.pyspy.txt"
                    )
                if mode == OPEN_LOOP:
                    creating = asyncio.create_task(on_schedule())
                else:
                    creating = asyncio.create_task(
                        create_pods(api, namespace, manifests, clock, options.concurrency, counted)
                    )
                shown = created if len(targets) == len(manifests) else None
                await self._throughput._wait_bound(
                    clock, watch, set(targets), progress.update, shown, creating
                )
                await creating
                lag = lags[0] if lags else math.nan
                profile = await asyncio.to_thread(recorder.stop) if recorder is not None else None
                await asyncio.sleep(METRICS_SETTLE)  # longer than DEFERRED_WORK_SECONDS
                after_cpu = cpu_seconds(context, scheduler)
                after_metrics = await asyncio.to_thread(
                    _keep_metrics, scheduler, directory / f"{page}-after.txt"
                )
                listed = (await api.list_all(pods_path(namespace)))["items"]
                if klass == "pvc":
                    listed_claims = (await api.list_all(claims_path(namespace)))["items"]
                    listed_volumes = (await api.list_all(PVS))["items"]
            finally:
                await watch.stop()
                await asyncio.to_thread(scheduler.stop)
            violations = check_placement(listed, nodes)
            if klass == "pvc":
                measured_names = {m["metadata"]["name"] for m in manifests}
                found = storage.placements(
                    [pod for pod in listed if pod["metadata"]["name"] in measured_names],
                    listed_claims,
                    listed_volumes,
                )
                violations += [f"volume: {text}" for text in storage.violations(found)]
            still = sum(
                1 for pod in listed if (pod["metadata"].get("labels") or {}).get(ROLE_LABEL) == EXISTING
            )
            outcome = (
                load_outcome(listed, nodes, node_load, load_rule(config, LOAD_CLASSES[klass]))
                if node_load is not None
                else None
            )
            timings = clock.summary(targets)
            record = WorkloadRecord(
                klass=klass,
                mode=mode,
                kind=kind,
                nodes=context.nodes,
                repeat=repeat,
                order=position,
                existing=len(existing),
                pods=len(targets),
                bound=timings.bound,
                throughput=timings.throughput,
                create_rate=timings.create_rate,
                p50=timings.p50,
                p99=timings.p99,
                max_latency=timings.max_latency,
                span=timings.span,
                rate=rate,
                schedule_lag=lag,
                unschedulable=len(manifests) - len(targets),
                victims=len(existing) - still,
                violation_count=len(violations),
                violations=violations[:KEPT_VIOLATIONS],
                busy_before=busy,
                idle_cpus=context.idle_cpus,
                load_before=load,
                profile=profile,
                over_target=outcome.over_target if outcome is not None else None,
                hot_start=outcome.hot_start if outcome is not None else None,
                latencies=timings.latencies if mode == OPEN_LOOP else [],
            )
            record.add_span((before_cpu, after_cpu), (before_metrics, after_metrics))
            progress.update(
                f"{timings.bound}/{len(targets)} bound: {number(timings.throughput, 1)} pods/s, "
                f"p99 {milliseconds(timings.p99)} ms, {len(violations)} violations; cleaning up"
            )
            await delete_pods(api, namespace, f"{ROLE_LABEL}!={EXISTING}", options.concurrency)
            if klass == "pvc":
                await delete_claims(api, namespace, options.concurrency, progress.update)
            if record.victims:
                progress.update(f"creating the {record.victims} victims again")
                await restore_existing(api, namespace, existing, options.concurrency)
        self._log(context, record, scheduler.log)
        return record

    def _config(self, context: BenchContext, klass: str) -> str:
        """The throughput section's configuration, or for a load class seed 000's profile (as
        deploy/06 ships it) scored by the class's plugin on the cluster's Prometheus."""
        options = self.options
        if klass not in LOAD_CLASSES:
            return bench_config(options.qps, options.burst, context.cluster.kubeconfig)
        return load_class_config(
            example_config(),
            LOAD_CLASSES[klass],
            SCHEDULER_NAME,
            options.qps,
            options.burst,
            context.cluster.kubeconfig,
            context.cluster.prometheus_url,
        )

    @staticmethod
    def _log(context: BenchContext, record: WorkloadRecord, log: Path) -> None:
        extra = []
        if record.mode == OPEN_LOOP:
            extra.append(
                f"arrivals {number(record.rate)}/s, late by at most {milliseconds(record.schedule_lag)} ms"
            )
        else:
            extra.append(f"created at {number(record.create_rate)}/s")
        if record.unschedulable:
            extra.append(f"{record.unschedulable} unschedulable pending")
        if record.victims:
            extra.append(f"{record.victims} victims")
        if record.over_target is not None:
            extra.append(f"{record.over_target} pods on nodes over the load threshold")
        extra.append(f"{number(record.failed_attempts)} failed attempts")
        context.log(
            f"    {LABELS[record.kind]:>8}: {record.klass} {record.mode}: "
            f"{number(record.throughput, 1)} pods/s "
            f"({', '.join(extra)}), p50 {milliseconds(record.p50)} ms, p99 {milliseconds(record.p99)} ms, "
            f"scheduler CPU {number(record.cpu_ms_per_pod('scheduler'), 2)} ms/pod, "
            f"{record.violation_count} placement violations"
        )
        if record.bound < record.pods:
            context.log(f"    [red]only {record.bound} of {record.pods} pods were bound; see {log}[/red]")
        if record.violation_count:
            rules = ", ".join(f"{rule} {count}" for rule, count in rules_broken(record.violations).items())
            context.log(f"    [red]{record.violation_count} placement violations ({rules}):[/red]")
            for text in record.violations[:5]:
                context.log(f"    [red]  {text}[/red]")

    # -- reporting ---------------------------------------------------------------------------
    def best(self, nodes: int, klass: str, kind: str, mode: str) -> WorkloadRecord | None:
        """The run with the highest throughput (complete runs first)."""
        runs = [r for r in self.records if (r.nodes, r.klass, r.kind, r.mode) == (nodes, klass, kind, mode)]
        if not runs:
            return None
        return max(
            runs, key=lambda r: (r.bound == r.pods, -math.inf if math.isnan(r.throughput) else r.throughput)
        )

    def open_loop_latency(self, nodes: int, klass: str, kind: str) -> tuple[float, float]:
        """(p50, p99) of a scheduler's open-loop runs of a class, their pods' latencies pooled."""
        wanted = (nodes, klass, kind, OPEN_LOOP)
        runs = [r for r in self.records if (r.nodes, r.klass, r.kind, r.mode) == wanted]
        pooled = [latency for run in runs for latency in run.latencies]
        return percentile(pooled, 0.50), percentile(pooled, 0.99)

    def violations(self, nodes: int, klass: str, kind: str) -> int:
        return sum(
            r.violation_count for r in self.records if (r.nodes, r.klass, r.kind) == (nodes, klass, kind)
        )

    def render(self, run: RunInfo) -> str:
        options = self.options
        ours_version = self.versions.get("secondary-scheduler", "?")
        upstream_version = self.versions.get("upstream kube-scheduler (scheduler-plugins build)", "?")
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            "The classes of kube-scheduler's own benchmark suite (scheduler_perf): pods with pod "
            "(anti-)affinity, node affinity, topology spreading, a stream with unschedulable pods, "
            "preemption and PVCs, each measured on a cluster that already holds pods of the same class. "
            f"Both schedulers run the throughput section's one-profile configuration (schedulerName "
            f"`{SCHEDULER_NAME}`, the default plugins; the `{LOAD_AWARE}` and `{LOAD_VARIATION}` classes "
            f"seed 000's load-aware profile, below) with qps {options.qps:g} and burst {options.burst}; "
            f"ours is `{ours_version}`, upstream's kube-scheduler `{upstream_version}`. "
            "*open loop*: the same pods created at a fixed rate, the same for both schedulers, "
            f"{open_loop_rule(options)}, so both schedulers and the machine keep up and the latency "
            "is the scheduler's own rather than a queue's. *violations*: bound pods "
            "breaking a hard constraint, over all the class's runs (0 expected).",
            "",
        ]
        for nodes in options.workload_sizes:
            lines += self._summary(nodes)
        if self.skipped:
            lines += [
                "Not measured: "
                + "; ".join(f"{s.klass} at {s.nodes:,} nodes ({s.reason})" for s in self.skipped)
                + ".",
                "",
            ]
        if "pvc" not in options.workload_classes:
            lines += ["The `pvc` class was not part of this run.", ""]
        else:
            lines += [
                f"The `pvc` class measures at most {PVC_PODS} pods ({PVC_OPEN_LOOP_PODS} in open loop): "
                "upstream's VolumeBinding spends about half a second of CPU per pod at 1,000 nodes (see "
                "the PVC section), so a full-size run would take most of an hour by itself.",
                "",
            ]
        lines += self._classes()
        lines += self._load_classes()
        lines += self._profiles()
        lines += self._all_runs()
        lines.append(self._method())
        return "\n".join(lines)

    def _summary(self, nodes: int) -> list[str]:
        rows = []
        for klass in self.options.workload_classes:
            ours, theirs = (self.best(nodes, klass, kind, SATURATION) for kind in (OURS, UPSTREAM))
            if ours is None or theirs is None:
                continue
            open_ours = self.best(nodes, klass, OURS, OPEN_LOOP)
            rate = open_ours.rate if open_ours is not None else math.nan
            open_p99 = [self.open_loop_latency(nodes, klass, kind)[1] for kind in (OURS, UPSTREAM)]
            cpu = [r.cpu_ms_per_pod("scheduler") for r in (ours, theirs)]
            broken = [self.violations(nodes, klass, kind) for kind in (OURS, UPSTREAM)]
            shown = " / ".join(f"**{count}**" if count else "0" for count in broken)
            rows.append(
                [
                    f"`{klass}`",
                    f"{nodes:,}",
                    f"{ours.existing:,} / {ours.pods:,}",
                    number(ours.throughput, 1),
                    number(theirs.throughput, 1),
                    f"**{number(ratio(ours.throughput, theirs.throughput), 2)}×**",
                    f"{milliseconds(ours.p99)} / {milliseconds(theirs.p99)}",
                    number(rate),
                    milliseconds(open_p99[0]),
                    milliseconds(open_p99[1]),
                    f"{number(ratio(open_p99[0], open_p99[1]), 2)}×",
                    number(cpu[0], 2),
                    number(cpu[1], 2),
                    f"{number(ratio(cpu[0], cpu[1]), 2)}×",
                    shown,
                ]
            )
        if not rows:
            return []
        header = [
            "class",
            "nodes",
            "pre-existing / measured pods",
            "ours (pods/s)",
            "upstream (pods/s)",
            "ours / upstream",
            "p99 ours / upstream (ms)",
            "open-loop rate (pods/s)",
            "open-loop p99 ours (ms)",
            "upstream (ms)",
            "ours / upstream",
            "sched CPU/pod ours (ms)",
            "upstream (ms)",
            "ours / upstream",
            "violations ours / upstream",
        ]
        return [f"### {nodes:,} nodes", "", table(header, rows, align="l" + "r" * 14)]

    def _load_classes(self) -> list[str]:
        """Each load class measured: its profile, load and Prometheus, and where its pods went
        against its plugin's threshold."""
        lines: list[str] = []
        for klass, profile, soft in (
            (LOAD_AWARE, self._packing_profile(), self._packing_soft()),
            (LOAD_VARIATION, self._variation_profile(), self._variation_soft()),
        ):
            if klass in self.options.workload_classes:
                paragraph = " ".join((profile, self._load_setup(), soft))
                lines += [f"### The `{klass}` class", "", paragraph, "", *self._load_table(klass)]
        return lines

    @staticmethod
    def _packing_profile() -> str:
        return (
            "Both schedulers run seed 000's profile as `deploy/06_configmap.yaml` ships it: "
            "TargetLoadPacking with targetUtilization 70, defaultRequests cpu 2000m and "
            "defaultRequestsMultiplier 1, reading the cluster's Prometheus (metricProvider type "
            "Prometheus); NodeResourcesBalancedAllocation disabled; every other plugin a default one. "
            f"LoadVariationRiskBalancing is not in it (it has the `{LOAD_VARIATION}` class): upstream's "
            "kube-scheduler (scheduler-plugins v0.34.7) panics at start with two Trimaran plugins reading "
            "a metric provider, each starting a load-watcher that registers `/watcher` on Go's default "
            "ServeMux."
        )

    @staticmethod
    def _variation_profile() -> str:
        return (
            f"Both schedulers run the `{LOAD_AWARE}` class's profile with LoadVariationRiskBalancing in "
            "TargetLoadPacking's place (the same extension point and metricProvider, the cluster's "
            "Prometheus): its args upstream's defaults, safeVarianceMargin 1 and safeVarianceSensitivity "
            "1; NodeResourcesBalancedAllocation disabled; every other plugin a default one. It scores a "
            "node by its riskier resource, risk = (mean + margin × stddev) / 2, the mean being the "
            "measured load plus the pod's request, as shares of the node's allocatable."
        )

    @staticmethod
    def _load_setup() -> str:
        """What both load classes share: Prometheus for the class alone, and the nodes' fixed loads."""
        levels = ", ".join(f"{100 * level:.0f}" for level in LOAD_LEVELS)
        return (
            "Prometheus and the node-load exporter run for this class alone: started before its first "
            f"run with an empty database, scraping every {LOAD_SCRAPE_INTERVAL}, and stopped after its "
            f"last, so that no other class is measured with them. Each node carries a fixed CPU load, one "
            f"of {levels} % drawn per node with the size as seed (the same in both load classes; memory "
            "load 0.6 of it), without noise and without load from pods: every sample of a node is the "
            "same, so both schedulers read the same averages whichever runs first (with pods counted, "
            "the 15-minute averages would still hold the previous run's pods). Its pods have no "
            "constraint beyond resources, which the placement check holds them to."
        )

    @staticmethod
    def _packing_soft() -> str:
        return (
            "*over target*: bound measured pods on a node whose CPU load ends above the target, counting "
            "the node's own load and TargetLoadPacking's prediction of the measured pods bound there (a "
            "soft measure, not a violation); *of them, already over*: those on a node above the target "
            "before any of them."
        )

    @staticmethod
    def _variation_soft() -> str:
        return (
            "Without noise every node's stddev is 0, so the margin term adds nothing and the plugin "
            "spreads pods by mean load alone: the load exporter's only variation is Gaussian noise drawn "
            "at each scrape, whose `stddev_over_time` over the 15-minute window both schedulers query "
            "depends on the samples a run's window holds (a single one just after Prometheus starts), "
            "so it would not be the same for both. *over risk*: bound measured pods on a node whose CPU "
            f"mean + margin × stddev ends above {RISK_THRESHOLD} %, counting the node's own load and the "
            "requests of the measured pods bound there (the plugin has no threshold of its own; this is "
            f"the `{LOAD_AWARE}` class's target, so the two read alike; a soft measure, not a "
            "violation); *of them, already over*: those on a node above it before any of them."
        )

    def _load_table(self, klass: str) -> list[str]:
        """A load class's runs: how many of its pods went over its threshold."""
        rows = [
            [
                f"{r.nodes:,}",
                f"{r.order}",
                r.mode if r.mode == SATURATION else f"{r.mode} {number(r.rate)}/s",
                LABELS[r.kind],
                f"{r.bound:,}/{r.pods:,}",
                f"{r.over_target:,}" if r.over_target is not None else "–",
                f"{r.hot_start:,}" if r.hot_start is not None else "–",
            ]
            for r in self.records
            if r.klass == klass
        ]
        if not rows:
            return []
        over = "over target" if LOAD_CLASSES[klass] == TARGET_LOAD_PACKING else "over risk"
        header = ["nodes", "#", "run", "scheduler", "bound", over, "of them, already over"]
        return [table(header, rows, align="rrllrrr")]

    def _profiles(self) -> list[str]:
        """Where our scheduler's time went in each of its runs (py-spy)."""
        profiled = [r for r in self.records if r.profile is not None and r.profile.busy]
        if not profiled:
            return []
        lines = ["### Where our scheduler's time goes", ""]
        lines += [
            "py-spy sampled our scheduler's stacks 100 times a second over the measured span of its "
            "saturation runs (and of its open-loop runs with `--profile-open-loop`); shares are of the "
            "samples where it was running Python rather than waiting for the network. *phases* count "
            "a sample for every phase on its stack; *functions* are where the samples were (self "
            "time), the top few.",
            "",
        ]
        rows = []
        for r in profiled:
            assert r.profile is not None
            phases = ", ".join(f"{name.strip()} {share:.0%}" for name, share in r.profile.phases if share)
            functions = "<br>".join(f"{share:.0%} `{name}`" for name, share in r.profile.functions[:5])
            run = f"{r.mode} {r.rate:g}/s" if r.mode == OPEN_LOOP else r.mode
            rows.append([f"{r.nodes:,}", f"`{r.klass}`", run, f"{r.profile.busy:,}", phases, functions])
        header = ["nodes", "class", "run", "busy samples", "phases", "functions (self)"]
        return [*lines, table(header, rows, align="rllrll"), ""]

    def _classes(self) -> list[str]:
        rows = [
            [f"`{name}`", BY_NAME[name].models, BY_NAME[name].what] for name in self.options.workload_classes
        ]
        return ["### The classes", "", table(["class", "scheduler_perf", "pods"], rows, align="lll")]

    def _all_runs(self) -> list[str]:
        rows = []
        for r in self.records:
            rows.append(
                [
                    f"{r.nodes:,}",
                    f"{r.order}",
                    f"`{r.klass}`",
                    r.mode if r.mode == SATURATION else f"{r.mode} {number(r.rate)}/s",
                    LABELS[r.kind],
                    f"{r.bound:,}/{r.pods:,}" + (f" (+{r.unschedulable} pending)" if r.unschedulable else ""),
                    number(r.throughput, 1),
                    number(r.create_rate),
                    milliseconds(r.p50),
                    milliseconds(r.p99),
                    milliseconds(r.max_latency),
                    f"{number(r.scheduled_attempts)} / {number(r.failed_attempts)}",
                    number(r.cpu_ms_per_pod("scheduler"), 2),
                    f"{r.victims:,}" if r.victims else "",
                    f"**{r.violation_count}**" if r.violation_count else "0",
                    f"{number(r.busy_before, 2)} ({number(r.idle_cpus, 2)})",
                    number(r.machine_busy, 2),
                ]
            )
        if not rows:
            return []
        header = [
            "nodes",
            "#",
            "class",
            "run",
            "scheduler",
            "bound",
            "pods/s",
            "created/s",
            "p50 (ms)",
            "p99 (ms)",
            "max (ms)",
            "attempts scheduled / failed",
            "sched CPU/pod (ms)",
            "victims",
            "violations",
            "busy before (idle)",
            "busy during",
        ]
        lines = [
            "### Every run",
            "",
            "In the order they ran. *created/s*: how fast the client created the pods. *attempts*: the "
            "scheduler's own `scheduler_schedule_attempts_total` during the measured span (failed: "
            "unschedulable or error). *victims*: pre-existing pods the scheduler preempted. *busy before*: "
            "CPUs the machine kept busy just before the run (in brackets: the idle cluster alone). "
            "*busy during*: CPUs the scheduler, the control plane, KWOK and the client kept busy "
            "during the run, of the machine's "
            f"{os.cpu_count() or '?'}.",
            "",
            table(header, rows, align="rrlllrrrrrrrrrrrr"),
        ]
        broken = [(r, text) for r in self.records for text in r.violations]
        if broken:
            lines += [
                "Placement violations (first 10):",
                "",
                *(f"- run {r.order} ({LABELS[r.kind]}, `{r.klass}`): {text}" for r, text in broken[:10]),
                "",
            ]
        return lines

    def _method(self) -> str:
        options = self.options
        sizes = ", ".join(f"{size:,}" for size in options.workload_sizes)
        return f"""\
### Method

- The cluster and the scheduler processes are the throughput section's: at each size ({sizes} nodes
  here) both schedulers run in turn, never at the same time, each a fresh process with the same
  flags and configuration, each waiting for its caches to sync and scheduling {options.warmup_pods}
  warm-up pods (not measured) first. Each class has a namespace of its own.
- Before a class's first run, its pre-existing pods are created already bound to nodes the benchmark
  chooses so that they keep the class's own constraints (one per host for hostname anti-affinity,
  all in the first zone for zone affinity, balanced over the zones otherwise); the preemption class
  has one on every node. They stay for all the class's runs; between runs only the measured pods
  are deleted, and the preemption class's victims are created again where they were, so both
  schedulers start from the same state.
- Saturation: {options.workload_repeats} run(s) per scheduler, the one going first alternating class
  by class; the measured pods are created as fast as the client can ({options.concurrency} requests
  in flight). *pods/s*: pods bound over the time from the first created to the last bound; latency
  from a pod's creation (the create call returning or the watch showing it) to the first watch
  event with `spec.nodeName`; percentiles are nearest-rank. In the churn class only the
  schedulable pods count; the others stay pending until the run's end.
- Open loop{"" if options.open_loop else " (off in this run)"}: {options.open_loop_repeats} runs of
  {options.open_loop_pods} pods per scheduler and class, in ABBA order, pod i created at
  t0 + i / rate (each create starts on time, at most {options.concurrency} in flight), with
  rate = {open_loop_rule(options)} for the class, rounded down. The open-loop p99 in the
  summary is of the runs' latencies pooled (one run's p99 of 500 pods is its fifth-slowest pod:
  it moved up to 2× between runs of either scheduler). Without a ceiling (until 2026-11-24) the
  cheap classes ran at 58-110 pods/s and the whole 2-CPU machine (API server, etcd, KWOK,
  client and scheduler) was 80-96 % busy: each pod costs the control plane 2-3× more CPU
  arriving alone than in a burst, and latency measured the machine's queue (`basic` at 1,000
  nodes: medians 3.0/2.9 ms ours/upstream at 77 pods/s, 16.3/6.0 at 110); *busy during* in the
  table above shows how loaded each run was.
- *sched CPU/pod*: the scheduler process's user and system CPU time during the measured span, per
  pod bound. *attempts*: from the scheduler's own metrics.
- The `{LOAD_AWARE}` and `{LOAD_VARIATION}` classes: seed 000's load-aware profile
  (TargetLoadPacking), and the same with LoadVariationRiskBalancing in its place, each on a
  Prometheus and a node-load exporter that run for that class alone (their paragraphs above say
  how); their pods are the basic ones.
- Placement check, after every run: the namespace's pods and the nodes are listed and every bound
  pod is checked against its node selector and required node affinity, its required pod
  anti-affinity (no two pods in one domain where either's term selects the other), its required
  pod affinity (a pod the term selects in its domain; a pod selecting itself may have been the
  first), its hard topology spread (over the domains of the nodes it admits, the counts of the
  pods it selects differ by at most maxSkew), the nodes' allocatable CPU, memory and pods, and
  for PVC-bearing pods, their volume pinned to their node.
- Raw numbers of every run: `workloads.json` in the run's working directory; beside it, under
  `workloads-<nodes>/`, each scheduler's log and its whole `/metrics` page just before and after
  the measured span (`<run>-<class>-<mode>.metrics-before.txt`, `-after.txt`), from which the time
  inside the scheduler (`scheduler_pod_scheduling_sli_duration_seconds`, attempt durations by
  result) can be set against the end-to-end latency afterwards.
"""
