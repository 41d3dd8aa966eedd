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
import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.context import BenchContext, BenchOptions
from bench.machine import load_average, process_cpu_seconds
from bench.report import comparison_rows, milliseconds, number, table
from bench.sections import RunInfo
from bench.stats import PodClock, RunMeasures, Timings, ratio
from bench.workload import PodWatch, create_pods, delete_all_pods, pod_manifests
from secondary_scheduler.cluster.progress import step
from secondary_scheduler.cluster.schedulers import (
    OURS,
    UPSTREAM,
    SchedulerRun,
    scheduler_config,
    start_scheduler,
)
from secondary_scheduler.kube.namespaces import ensure_namespace

SCHEDULER_NAME = "bench-scheduler"
KUBE_DEFAULT_QPS = 50.0
KUBE_DEFAULT_BURST = 100
LABELS = {OURS: "ours", UPSTREAM: "upstream"}
COMPONENTS = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager")
DEFERRED_WORK_SECONDS = 0.5
"""How long after its last pod is bound a scheduler's CPU is read: both send their Events after
the bindings (from tasks or goroutines of their own), and sending them is work the span must
count. Both schedulers wait the same."""


def cpu_seconds(
    context: BenchContext, scheduler: SchedulerRun | None, components: Sequence[str] = COMPONENTS
) -> dict[str, float]:
    """CPU seconds so far of the scheduler (if any), the cluster's ``components`` and this client."""
    cpu = {} if scheduler is None else {"scheduler": process_cpu_seconds(scheduler.process.pid)}
    for name in components:
        record = context.cluster.records.get(name)
        if record is not None:
            cpu[name] = process_cpu_seconds(record.pid)
    cpu["bench client"] = process_cpu_seconds(os.getpid())
    return cpu


async def cpu_seconds_settled(
    context: BenchContext, scheduler: SchedulerRun | None, components: Sequence[str] = COMPONENTS
) -> dict[str, float]:
    """``cpu_seconds`` once the scheduler has sent what its last pods caused (DEFERRED_WORK_SECONDS)."""
    await asyncio.sleep(DEFERRED_WORK_SECONDS)
    return cpu_seconds(context, scheduler, components)


@dataclass(kw_only=True)
class RunRecord(RunMeasures):
    """One scheduler's one run at one size."""

    qps: float
    burst: int
    watch_events: int = 0


def bench_config(qps: float, burst: int, kubeconfig: Path) -> str:
    """The one configuration both schedulers get.

    The kubeconfig goes into ``clientConnection``: kube-scheduler ignores ``--kubeconfig``
    when ``--config`` is given, and ours reads the same field.
    """
    config = scheduler_config(SCHEDULER_NAME, qps=qps, burst=burst)
    return config.replace("clientConnection:\n", f"clientConnection:\n  kubeconfig: {kubeconfig}\n", 1)


def _counters(page: str) -> dict[str, float]:
    """The scheduler's own counters for the bench profile (summed over its samples) in a /metrics page."""
    profile = f'profile="{SCHEDULER_NAME}"'
    lines = page.splitlines()

    def sample(name: str, result: str) -> float:
        total = 0.0
        for line in lines:
            if (
                line.startswith(name)
                and line[len(name) : len(name) + 1] in (" ", "{")
                and profile in line
                and f'result="{result}"' in line
            ):
                total += float(line.rsplit(" ", 1)[1])
        return total

    return {
        "scheduled": sample("scheduler_schedule_attempts_total", "scheduled"),
        "failed": sample("scheduler_schedule_attempts_total", "unschedulable")
        + sample("scheduler_schedule_attempts_total", "error"),
        "duration_sum": sample("scheduler_scheduling_attempt_duration_seconds_sum", "scheduled"),
        "duration_count": sample("scheduler_scheduling_attempt_duration_seconds_count", "scheduled"),
    }


def _metrics(run: SchedulerRun) -> dict[str, float]:
    """The scheduler's own counters for the bench profile, read from one fetch of its page."""
    return _counters(run.get("/metrics").text)


def _keep_metrics(run: SchedulerRun, path: Path) -> dict[str, float]:
    """``_metrics``, also saving the whole page, so that a run's phases (queue, cycle, binding)
    can be compared between the schedulers after the fact."""
    page = run.get("/metrics").text
    path.write_text(page)
    return _counters(page)


class ThroughputSection:
    name = "throughput"
    title = "Throughput and latency"

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records: list[RunRecord] = []

    # -- measuring ---------------------------------------------------------------------
    async def measure(self, context: BenchContext) -> None:
        options = self.options
        namespace = f"bench-{context.nodes}"
        await ensure_namespace(context.api, namespace)
        pods = options.pods_for(context.nodes)
        position = 0
        for repeat in range(options.repeats):
            order = (UPSTREAM, OURS) if repeat % 2 == 0 else (OURS, UPSTREAM)
            for kind in order:
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
            busy = await context.wait_quiet(progress.update)
            load = load_average()
            progress.update("starting the scheduler")
            scheduler = await asyncio.to_thread(
                start_scheduler, kind, config, context.cluster.kubeconfig, directory, f"{prefix}-{kind}"
            )
            clock = PodClock()
            watch = PodWatch(context.api, namespace, clock)
            try:
                await watch.start()
                progress.update("warming up")
                await create_pods(context.api, namespace, warmup, clock, options.concurrency)
                await self._wait_bound(clock, watch, {m["metadata"]["name"] for m in warmup}, progress.update)
                await asyncio.sleep(DEFERRED_WORK_SECONDS)  # the warm-up's Events sent
                before_metrics = await asyncio.to_thread(_metrics, scheduler)
                before_cpu = cpu_seconds(context, scheduler)
                names = [manifest["metadata"]["name"] for manifest in manifests]
                created = [0]

                def count() -> None:
                    created[0] += 1

                creating = asyncio.create_task(
                    create_pods(context.api, namespace, manifests, clock, options.concurrency, count)
                )
                await self._wait_bound(clock, watch, set(names), progress.update, created, creating)
                await creating
                after_cpu = await cpu_seconds_settled(context, scheduler)
                after_metrics = await asyncio.to_thread(_metrics, scheduler)
            finally:
                await watch.stop()
                await asyncio.to_thread(scheduler.stop)
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

    async def _wait_bound(
        self,
        clock: PodClock,
        watch: PodWatch,
        names: set[str],
        report: Callable[[str], None],
        created: list[int] | None = None,
        creating: asyncio.Task[None] | None = None,
    ) -> None:
        """Until every pod in ``names`` is bound, or nothing got bound for ``stall_timeout``."""
        total = len(names)
        last_count, last_change = -1, time.monotonic()
        shown = 0.0
        while True:
            if creating is not None and creating.done():
                error = creating.exception()
                if error is not None:
                    raise error
            bound = clock.bound_count(names)
            now = time.monotonic()
            if bound != last_count:
                last_count, last_change = bound, now
            if bound >= total or now - last_change > self.options.stall_timeout:
                return
            if now - shown >= 0.5:
                shown = now
                made = f"{created[0]}/{total} created, " if created is not None else ""
                report(f"{made}{bound}/{total} bound")
            watch.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watch.changed.wait(), timeout=0.5)

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

    # -- reporting ---------------------------------------------------------------------
    def best(self, nodes: int, kind: str, qps: float) -> RunRecord | None:
        """The run with the highest throughput (complete runs first)."""
        runs = [r for r in self.records if r.nodes == nodes and r.kind == kind and r.qps == qps]
        if not runs:
            return None
        return max(
            runs, key=lambda r: (r.bound == r.pods, -math.inf if math.isnan(r.throughput) else r.throughput)
        )

    def render(self, run: RunInfo) -> str:
        options = run.options
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            f"Both schedulers run the same one-profile configuration (schedulerName `{SCHEDULER_NAME}`, "
            f"the default plugins, leader election off) with the same client limits, "
            f"qps {options.qps:g} and burst {options.burst}, as kube-scheduler's scheduler_perf sets them, "
            "so that neither waits on its own rate limiter. Nodes are 16 CPUs / 64Gi / 110 pods; the pods "
            "ask for 100m-500m CPU and 128-512Mi memory, so all fit. The best of "
            f"{options.repeats} runs per scheduler and size (by throughput) is shown; every run is listed "
            "further down.",
            "",
        ]
        summary_rows = []
        for nodes in options.sizes:
            ours = self.best(nodes, OURS, options.qps)
            theirs = self.best(nodes, UPSTREAM, options.qps)
            if ours is None or theirs is None:
                continue
            summary_rows.append(
                [
                    f"{nodes:,}",
                    f"{ours.pods:,}",
                    number(ours.throughput, 1),
                    number(theirs.throughput, 1),
                    f"**{number(ratio(ours.throughput, theirs.throughput), 2)}×**",
                ]
            )
        if summary_rows:
            lines += [
                "### Summary",
                "",
                table(
                    ["nodes", "pods", "ours (pods/s)", "upstream (pods/s)", "ours / upstream"], summary_rows
                ),
            ]
        for nodes in options.sizes:
            lines += self._size_table(nodes, options.qps, options.burst)
        if options.kube_default:
            smallest = min(options.sizes)
            ours = self.best(smallest, OURS, KUBE_DEFAULT_QPS)
            if ours is not None:
                lines += [
                    f"### With kube-scheduler's default client limits (qps {KUBE_DEFAULT_QPS:g}, "
                    f"burst {KUBE_DEFAULT_BURST}), {smallest:,} nodes",
                    "",
                    "One run each. A binding is one API request, so after the burst of 100 both "
                    "schedulers are held to about 50 pods/s by their own rate limiter (Events go "
                    "through a client of their own in both).",
                    "",
                    *self._size_table(smallest, KUBE_DEFAULT_QPS, KUBE_DEFAULT_BURST, heading=False),
                ]
        lines += self._all_runs()
        lines += [self._method()]
        return "\n".join(lines)

    def _size_table(self, nodes: int, qps: float, burst: int, heading: bool = True) -> list[str]:
        ours = self.best(nodes, OURS, qps)
        theirs = self.best(nodes, UPSTREAM, qps)
        if ours is None or theirs is None:
            return []
        rows = comparison_rows(ours, theirs, lambda record: [f"{record.bound:,}/{record.pods:,}"])
        title = [f"### {nodes:,} nodes, {ours.pods:,} pods", ""] if heading else []
        header = [
            "scheduler",
            "pods/s",
            "p50 latency (ms)",
            "p99 latency (ms)",
            "scheduler CPU/pod (ms)",
            "bound",
        ]
        return [*title, table(header, rows)]

    def _all_runs(self) -> list[str]:
        rows = []
        for record in self.records:
            rows.append(
                [
                    f"{record.nodes:,}",
                    f"{record.order}",
                    LABELS[record.kind],
                    f"{record.qps:g}/{record.burst}",
                    f"{record.bound:,}/{record.pods:,}",
                    number(record.throughput, 1),
                    number(record.create_rate),
                    milliseconds(record.p50),
                    milliseconds(record.p99),
                    milliseconds(record.max_latency),
                    milliseconds(record.mean_attempt_seconds),
                    number(record.cpu_ms_per_pod("scheduler"), 2),
                    number(record.cpu_ms_per_pod("kube-apiserver"), 2),
                    f"{number(record.busy_before, 2)} ({number(record.idle_cpus, 2)})",
                ]
            )
        return [
            "### Every run",
            "",
            "In the order they ran. *created/s*: how fast the client created the pods (the most any "
            "scheduler could reach). *attempt*: the scheduler's own mean "
            "`scheduler_scheduling_attempt_duration_seconds` (scheduling plus binding, as it reports "
            "it). *CPU/pod*: CPU time the scheduler and the API server used during the run, per pod "
            "bound. *busy before*: CPUs the machine kept busy just before the run, and in brackets what the "
            "idle cluster alone kept busy at that size.",
            "",
            table(
                [
                    "nodes",
                    "#",
                    "scheduler",
                    "qps/burst",
                    "bound",
                    "pods/s",
                    "created/s",
                    "p50 (ms)",
                    "p99 (ms)",
                    "max (ms)",
                    "attempt (ms)",
                    "sched CPU/pod (ms)",
                    "apiserver CPU/pod (ms)",
                    "busy before (idle)",
                ],
                rows,
                align="rrlrrrrrrrrrrr",
            ),
        ]

    def _method(self) -> str:
        options = self.options
        return f"""\
### Method

- One cluster is grown through the sizes ({", ".join(f"{size:,}" for size in options.sizes)} KWOK nodes);
  at each size both schedulers run on it in turn, never at the same time, each as a fresh process
  started with the same flags and configuration, and each waits for its caches to sync first.
- The client (this benchmark) creates the pods with {options.concurrency} requests in flight and
  watches them, through the project's own API client (`kube/client.py`, the scheduler's too;
  about 0.6 ms of CPU per request here). A pod's latency runs from its creation
  (the create call returning, or the watch showing it, whichever is first) to the first watch
  event showing `spec.nodeName`, so it includes the API server's and the watch's delays, the
  same for both schedulers. Pods are created faster than either scheduler binds them, so the
  latency mostly measures how long a pod waits in the queue behind the ones created before it:
  it grows with the gap between the creation rate and the throughput. Throughput is the number
  of pods over the time from the first creation to the last binding. {options.warmup_pods}
  warm-up pods are scheduled (and not measured) before each run.
- *scheduler CPU/pod* is the user and system CPU time of the scheduler process during the
  measured span (from /proc), over the pods bound; it includes its watches, its bindings and
  its Events.
- Percentiles are nearest-rank over every measured pod.
- Everything runs on this one machine: the API server, etcd, KWOK, the benchmark client and
  the scheduler share its CPUs, so the numbers measure the whole system, and a scheduler that
  uses less CPU leaves more to the API server. Between runs the pods are deleted, and the next
  run waits until the machine is quiet again (at most {options.quiet_margin:g} CPUs busier than
  the idle cluster measured after it settled, for 2 seconds; at most {options.quiet_timeout:g}s).
- Raw numbers of every run: `throughput.json` in the run's working directory.
"""
