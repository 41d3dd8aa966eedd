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
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import dra, storage
from bench.claims import PVS, claims_path, delete_claims, wait_published
from bench.context import BenchContext, BenchOptions
from bench.machine import component_versions
from bench.measuring import (
    LABELS,
    SCHEDULER_NAME,
    abba,
    bench_config,
    cpu_seconds,
    keep_counters,
    started_scheduler,
    wait_bound,
)
from bench.objects import create_objects
from bench.profiles import Recorder
from bench.report import milliseconds, number
from bench.stats import PodClock
from bench.workload import PodWatch, create_pods, delete_all_pods, pod_manifests, pods_path
from bench.workloadclasses import (
    CLASS_NAMES,
    EXISTING,
    LOAD_CLASSES,
    ROLE_LABEL,
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
from bench.workloads_report import (
    DRA_OPEN_LOOP_PODS,
    DRA_PODS,
    KEPT_VIOLATIONS,
    LOAD_SCRAPE_INTERVAL,
    METRICS_SETTLE,
    OPEN_LOOP,
    PVC_OPEN_LOOP_PODS,
    PVC_PODS,
    SATURATION,
    Skipped,
    WorkloadRecord,
    WorkloadsReport,
)
from secondary_scheduler.kube.client import JSON, ApiClient, ApiError
from secondary_scheduler.kube.namespaces import ensure_namespace
from secsched_devtools.cluster.localcluster import ClusterError
from secsched_devtools.cluster.progress import step
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM
from secsched_devtools.repo import example_config


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
class WorkloadsSection(WorkloadsReport):
    """Measures the workload classes; ``WorkloadsReport`` writes what it measured."""

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records = []
        self.skipped = []
        self.versions = {}

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
        elif klass == "dra":
            measured, open_loop_pods = min(measured, DRA_PODS), min(open_loop_pods, DRA_OPEN_LOOP_PODS)
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
            await wait_published(context)
        namespace = f"bench-wl-{context.nodes}-{klass}"
        await ensure_namespace(api, namespace)
        if klass == "dra":
            with step(f"{context.nodes:,} nodes · {klass} · a DeviceClass and {len(nodes):,} ResourceSlices"):
                await dra.publish(api, node_objects, options.concurrency)
                await api.create(dra.template_path(namespace), dra.claim_template())
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
                if klass == "dra":
                    await dra.wait_claims_gone(api, namespace, context.log)
                    await dra.unpublish(api, node_objects, options.concurrency)
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
        for repeat, kind in abba(repeats, order):
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
            async with started_scheduler(
                context, kind, config, directory, f"{prefix}-{kind}", progress.update
            ) as run:
                scheduler, busy, load = run.scheduler, run.busy_before, run.load_before
                clock = PodClock()
                watch = PodWatch(api, namespace, clock)
                listed_claims: list[JSON] = []
                listed_volumes: list[JSON] = []
                resource_claims: list[JSON] = []
                try:
                    await watch.start()
                    progress.update("warming up")
                    await create_pods(api, namespace, warm, clock, options.concurrency)
                    await wait_bound(
                        clock,
                        watch.changed,
                        {m["metadata"]["name"] for m in warm},
                        progress.update,
                        options.stall_timeout,
                    )
                    await asyncio.sleep(METRICS_SETTLE)
                    page = f"{prefix}-{klass}-{mode}.metrics"
                    before_metrics = await asyncio.to_thread(
                        keep_counters, scheduler, directory / f"{page}-before.txt"
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
                    shown = (lambda: created[0]) if len(targets) == len(manifests) else None
                    await wait_bound(
                        clock,
                        watch.changed,
                        set(targets),
                        progress.update,
                        options.stall_timeout,
                        shown,
                        creating,
                    )
                    await creating
                    lag = lags[0] if lags else math.nan
                    profile = await asyncio.to_thread(recorder.stop) if recorder is not None else None
                    await asyncio.sleep(METRICS_SETTLE)  # longer than DEFERRED_WORK_SECONDS
                    after_cpu = cpu_seconds(context, scheduler)
                    after_metrics = await asyncio.to_thread(
                        keep_counters, scheduler, directory / f"{page}-after.txt"
                    )
                    listed = (await api.list_all(pods_path(namespace)))["items"]
                    if klass == "pvc":
                        listed_claims = (await api.list_all(claims_path(namespace)))["items"]
                        listed_volumes = (await api.list_all(PVS))["items"]
                    if klass == "dra":
                        resource_claims = (await api.list_all(dra.claims_path(namespace)))["items"]
                finally:
                    await watch.stop()
            violations = check_placement(listed, nodes)
            if klass == "pvc":
                measured_names = {m["metadata"]["name"] for m in manifests}
                found = storage.placements(
                    [pod for pod in listed if pod["metadata"]["name"] in measured_names],
                    listed_claims,
                    listed_volumes,
                )
                violations += [f"volume: {text}" for text in storage.violations(found)]
            if klass == "dra":
                violations += [f"device: {text}" for text in dra.violations(listed, resource_claims)]
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
            await delete_all_pods(api, namespace, options.concurrency, selector=f"{ROLE_LABEL}!={EXISTING}")
            if klass == "pvc":
                await delete_claims(api, namespace, options.concurrency, progress.update)
            if klass == "dra":
                await dra.wait_claims_gone(api, namespace, progress.update)
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
