"""Throughput and latency: ours against the upstream kube-scheduler, same profile, same client limits.

For each cluster size, each scheduler runs ``repeats`` times, in ABBA order (upstream,
ours, ours, upstream, ...) so that a machine getting slower or faster during the size
does not favour either. A run:

1. waits until the machine has settled (the previous run's pods are gone, KWOK is idle);
2. starts the scheduler (a fresh process) and waits until its caches are synced;
3. schedules a few warm-up pods, not measured;
4. creates the measured pods as fast as the client can (bounded concurrency) while a
   watch notes, per pod, when it was created and when it was first seen bound;
5. stops the scheduler and deletes the pods.

Throughput is pods / (last bound - first created); latency is bound - created per pod.
The table reports each scheduler's best run by throughput (interference from other work
only ever slows a run down), and every run is listed below it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict

from bench.context import BenchContext, BenchOptions
from bench.measuring import (
    DEFERRED_WORK_SECONDS,
    LABELS,
    SCHEDULER_NAME,
    abba,
    bench_config,
    cpu_seconds,
    cpu_seconds_settled,
    read_counters,
    started_scheduler,
    wait_bound,
)
from bench.report import milliseconds, number
from bench.stats import PodClock, Timings
from bench.throughput_report import KUBE_DEFAULT_BURST, KUBE_DEFAULT_QPS, RunRecord, ThroughputReport
from bench.workload import PodWatch, create_pods, delete_all_pods, pod_manifests
from secondary_scheduler.kube.namespaces import ensure_namespace
from secsched_devtools.cluster.progress import step
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM


class ThroughputSection(ThroughputReport):
    """Measures pods that ask for CPU and memory only; ``ThroughputReport`` writes what it measured."""

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records = []

    async def measure(self, context: BenchContext) -> None:
        options = self.options
        namespace = f"bench-{context.nodes}"
        await ensure_namespace(context.api, namespace)
        pods = options.pods_for(context.nodes)
        position = 0
        for repeat, kind in abba(options.repeats):
            position += 1
            record = await self._run(
                context, namespace, kind, pods, options.qps, options.burst, repeat, position
            )
            self.records.append(record)
            self._save()
        if options.kube_default and context.nodes == min(options.sizes):
            for kind in (UPSTREAM, OURS):
                position += 1
                record = await self._run(
                    context,
                    namespace,
                    kind,
                    min(pods, options.kube_default_pods),
                    KUBE_DEFAULT_QPS,
                    KUBE_DEFAULT_BURST,
                    0,
                    position,
                )
                self.records.append(record)
                self._save()

    def _save(self) -> None:
        path = self.options.workdir / "throughput.json"
        path.write_text(json.dumps([asdict(record) for record in self.records], indent=1))

    async def _run(
        self,
        context: BenchContext,
        namespace: str,
        kind: str,
        pods: int,
        qps: float,
        burst: int,
        repeat: int,
        position: int,
    ) -> RunRecord:
        options = self.options
        label = f"{context.nodes} nodes · {LABELS[kind]} · run {position} (qps {qps:g}/burst {burst})"
        prefix = f"{LABELS[kind][0]}{position}"
        manifests = pod_manifests(prefix, pods, SCHEDULER_NAME, seed=context.nodes * 1000 + int(qps))
        warmup = pod_manifests(f"{prefix}-warm", options.warmup_pods, SCHEDULER_NAME, seed=1)
        config = bench_config(qps, burst, context.cluster.kubeconfig)
        directory = options.workdir / f"nodes-{context.nodes}"
        with step(label, log_every=5.0) as progress:
            async with started_scheduler(
                context, kind, config, directory, f"{prefix}-{kind}", progress.update
            ) as run:
                scheduler, busy, load = run.scheduler, run.busy_before, run.load_before
                clock = PodClock()
                watch = PodWatch(context.api, namespace, clock)
                try:
                    await watch.start()
                    progress.update("warming up")
                    await create_pods(context.api, namespace, warmup, clock, options.concurrency)
                    await wait_bound(
                        clock,
                        watch.changed,
                        {m["metadata"]["name"] for m in warmup},
                        progress.update,
                        options.stall_timeout,
                    )
                    await asyncio.sleep(DEFERRED_WORK_SECONDS)  # the warm-up's Events sent
                    before_metrics = await asyncio.to_thread(read_counters, scheduler)
                    before_cpu = cpu_seconds(context, scheduler)
                    names = [manifest["metadata"]["name"] for manifest in manifests]
                    created = [0]

                    def count() -> None:
                        created[0] += 1

                    creating = asyncio.create_task(
                        create_pods(context.api, namespace, manifests, clock, options.concurrency, count)
                    )
                    await wait_bound(
                        clock,
                        watch.changed,
                        set(names),
                        progress.update,
                        options.stall_timeout,
                        lambda: created[0],
                        creating,
                    )
                    await creating
                    after_cpu = await cpu_seconds_settled(context, scheduler)
                    after_metrics = await asyncio.to_thread(read_counters, scheduler)
                finally:
                    await watch.stop()
            timings = clock.summary(names)
            record = self._record(kind, context.nodes, repeat, qps, burst, position, timings)
            record.busy_before, record.load_before, record.watch_events = busy, load, watch.events
            record.idle_cpus = context.idle_cpus
            record.add_span((before_cpu, after_cpu), (before_metrics, after_metrics))
            progress.update(
                f"{timings.bound}/{pods} bound: {number(timings.throughput)} pods/s, "
                f"p50 {milliseconds(timings.p50)} ms, p99 {milliseconds(timings.p99)} ms; cleaning up"
            )
            await delete_all_pods(context.api, namespace, options.concurrency)
        context.log(
            f"    {LABELS[kind]:>8}: {number(timings.throughput, 1)} pods/s "
            f"(created at {number(timings.create_rate)}/s), p50 {milliseconds(timings.p50)} ms, "
            f"p99 {milliseconds(timings.p99)} ms, scheduler CPU "
            f"{number(record.cpu_ms_per_pod('scheduler'), 2)} ms/pod"
        )
        if not timings.complete:
            context.log(f"    [red]only {timings.bound} of {pods} pods were bound; see {scheduler.log}[/red]")
        return record

    @staticmethod
    def _record(
        kind: str, nodes: int, repeat: int, qps: float, burst: int, position: int, timings: Timings
    ) -> RunRecord:
        return RunRecord(
            kind=kind,
            nodes=nodes,
            repeat=repeat,
            qps=qps,
            burst=burst,
            order=position,
            pods=timings.pods,
            bound=timings.bound,
            throughput=timings.throughput,
            create_rate=timings.create_rate,
            p50=timings.p50,
            p99=timings.p99,
            max_latency=timings.max_latency,
            span=timings.span,
        )
