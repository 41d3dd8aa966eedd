"""Gangs (Coscheduling): ours against the upstream kube-scheduler, many PodGroups submitted at once.

The throughput section's method (same cluster per size, ABBA order, a fresh scheduler
process per run, the same client limits), with both schedulers running one profile that
enables Coscheduling as scheduler-plugins documents it: queueSort Coscheduling in place of
PrioritySort, and Coscheduling at preFilter, postFilter, permit and reserve, with its default
args. A run:

1. waits until the machine has settled, makes a fresh namespace and starts the scheduler;
2. schedules one warm-up gang (not measured);
3. creates every measured PodGroup (minMember = the gang's size) and waits until the machine
   has settled again, so that both schedulers know every group before its first pod comes;
4. creates every gang's pods at once (bounded concurrency, gang after gang) while a watch
   notes when each pod was created and when it was first seen bound;
5. lists the pods and checks that no gang is partly bound (some members bound, some not);
6. stops the scheduler and deletes the pods and the namespace (and so its PodGroups).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from bench.context import BenchContext, BenchOptions
from bench.machine import component_versions, load_average
from bench.report import milliseconds, number, table
from bench.sections import RunInfo
from bench.stats import PodClock, percentile, ratio
from bench.throughput import LABELS, SCHEDULER_NAME, _metrics, cpu_seconds, cpu_seconds_settled
from bench.workload import JSON, PodWatch, create_pods, delete_all_pods, pod_manifests, pods_path
from secondary_scheduler.cluster.progress import step
from secondary_scheduler.cluster.schedulers import (
    COSCHEDULING_PROFILE,
    OURS,
    UPSTREAM,
    scheduler_config,
    start_scheduler,
)
from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.plugins.coscheduling.podgroup import POD_GROUP_LABEL

WARMUP_MEMBERS = 8
LOADED = 1.0
"""A 1-minute load above this before the benchmark began means other work was running."""
IDLE_BUSY = 0.5
"""CPUs busy with the cluster idle above which other work was running."""


def podgroups_path(namespace: str) -> str:
    return f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"


def gang_config(qps: float, burst: int) -> str:
    """The one configuration both schedulers get: the default plugins plus Coscheduling."""
    return scheduler_config(SCHEDULER_NAME, qps=qps, burst=burst, profile_extra=COSCHEDULING_PROFILE)


# -- the workload (pure) ---------------------------------------------------------------------
def gang_sizes(groups: int, members: tuple[int, int], seed: int = 0) -> list[int]:
    """How many pods each of ``groups`` gangs has, uniformly in [low, high]; the same seed, the same sizes."""
    low, high = members
    if groups < 1 or low < 1 or high < low:
        raise ValueError(f"need at least one gang of at least one pod, got {groups} gangs of {members}")
    rng = random.Random(seed)
    return [rng.randint(low, high) for _ in range(groups)]


def gang_manifests(
    prefix: str, sizes: Sequence[int], scheduler_name: str, seed: int = 0
) -> tuple[list[JSON], list[JSON]]:
    """(PodGroups, pods): gang ``i`` is the PodGroup ``<prefix>-g<i>`` with minMember its size, and
    that many pods labelled with it, in gang order. Requests as the throughput section's (all fit)."""
    groups: list[JSON] = []
    pods: list[JSON] = []
    shapes = pod_manifests(prefix, sum(sizes), scheduler_name, seed)
    for index, size in enumerate(sizes):
        group = f"{prefix}-g{index:03d}"
        groups.append(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": group, "labels": {"app": "bench", "run": prefix}},
                "spec": {"minMember": size},
            }
        )
        for member in range(size):
            pod = shapes[len(pods)]
            pod["metadata"]["name"] = f"{group}-{member:02d}"
            pod["metadata"]["labels"][POD_GROUP_LABEL] = group
            pods.append(pod)
    return groups, pods


def members_of(pods: Iterable[JSON]) -> dict[str, list[str]]:
    """PodGroup name -> its pods' names, from the pods' labels."""
    members: dict[str, list[str]] = {}
    for pod in pods:
        metadata = pod["metadata"]
        group = (metadata.get("labels") or {}).get(POD_GROUP_LABEL)
        if group:
            members.setdefault(str(group), []).append(str(metadata["name"]))
    return members


def gang_spans(clock: PodClock, members: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Each fully bound gang's time from its first pod created to its last pod bound (seconds)."""
    spans = {}
    for group, names in members.items():
        if not names or any(name not in clock.bound or name not in clock.created for name in names):
            continue
        spans[group] = max(clock.bound[name] for name in names) - min(clock.created[name] for name in names)
    return spans


def bind_spreads(clock: PodClock, members: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Each fully bound gang's time from its first pod bound to its last (seconds): how together it went."""
    spreads = {}
    for group, names in members.items():
        if names and all(name in clock.bound for name in names):
            times = [clock.bound[name] for name in names]
            spreads[group] = max(times) - min(times)
    return spreads


def partial_gangs(pods: Iterable[JSON], members: Mapping[str, Sequence[str]]) -> list[str]:
    """The gangs some but not all of whose pods are bound (``spec.nodeName``), as ``name: k/n bound``.

    A pod missing from ``pods`` counts as not bound; every gang's minMember is its size here.
    """
    nodes = {str(pod["metadata"]["name"]): (pod.get("spec") or {}).get("nodeName") for pod in pods}
    found = []
    for group, names in members.items():
        bound = sum(1 for name in names if nodes.get(name))
        if 0 < bound < len(names):
            found.append(f"{group}: {bound}/{len(names)} bound")
    return found


# -- one run ----------------------------------------------------------------------------------
@dataclass
class GangRunRecord:
    """One scheduler's one run at one size."""

    kind: str
    nodes: int
    repeat: int
    order: int
    groups: int
    pods: int
    bound: int
    complete_gangs: int
    throughput: float
    """Pods bound per second, from the first pod created to the last bound."""
    all_bound: float
    """Seconds from the first pod created until every gang was fully bound (NaN if one never was)."""
    create_rate: float
    p50: float
    """Per gang, first pod created -> last pod bound (seconds), nearest-rank over the complete gangs."""
    p99: float
    max_gang: float
    spread_p50: float = math.nan
    """Per gang, first pod bound -> last pod bound."""
    spread_p99: float = math.nan
    partial: list[str] = field(default_factory=list)
    """Gangs partly bound when the run ended (the placement check's violations)."""
    scheduled_attempts: float = math.nan
    failed_attempts: float = math.nan
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    busy_before: float = math.nan
    idle_cpus: float = math.nan
    load_before: float = math.nan
    load_after: float = math.nan

    def cpu_ms_per_pod(self, process: str) -> float:
        seconds = self.cpu_seconds.get(process)
        return math.nan if seconds is None or not self.bound else 1000 * seconds / self.bound


def gang_record(
    kind: str,
    nodes: int,
    repeat: int,
    order: int,
    clock: PodClock,
    members: Mapping[str, Sequence[str]],
    listed: Iterable[JSON],
) -> GangRunRecord:
    """What one run adds up to, from the client's clock and the pods listed at its end."""
    names = [name for group in members.values() for name in group]
    timings = clock.summary(names)
    spans = gang_spans(clock, members)
    spreads = list(bind_spreads(clock, members).values())
    complete = len(spans) == len(members)
    return GangRunRecord(
        kind=kind,
        nodes=nodes,
        repeat=repeat,
        order=order,
        groups=len(members),
        pods=len(names),
        bound=timings.bound,
        complete_gangs=len(spans),
        throughput=timings.throughput,
        all_bound=timings.span if complete else math.nan,
        create_rate=timings.create_rate,
        p50=percentile(list(spans.values()), 0.50),
        p99=percentile(list(spans.values()), 0.99),
        max_gang=max(spans.values(), default=math.nan),
        spread_p50=percentile(spreads, 0.50),
        spread_p99=percentile(spreads, 0.99),
        partial=partial_gangs(listed, members),
    )


async def _create_each(api: ApiClient, path: str, manifests: Sequence[JSON]) -> None:
    for manifest in manifests:
        await api.create(path, manifest)


# -- the section ------------------------------------------------------------------------------
class GangSection:
    name = "gang"
    title = "Gangs (Coscheduling)"

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records: list[GangRunRecord] = []
        self.versions: dict[str, str] = {}

    async def measure(self, context: BenchContext) -> None:
        if context.nodes not in self.options.gang_sizes:
            return
        self.versions = component_versions()
        groups = self.options.gang_groups_for(context.nodes)
        position = 0
        for repeat in range(self.options.repeats):
            order = (UPSTREAM, OURS) if repeat % 2 == 0 else (OURS, UPSTREAM)
            for kind in order:
                position += 1
                self.records.append(await self._run(context, kind, groups, repeat, position))
                self._save()

    def _save(self) -> None:
        raw = {"runs": [asdict(record) for record in self.records], "versions": self.versions}
        (self.options.workdir / "gang.json").write_text(json.dumps(raw, indent=1))

    async def _wait_bound(
        self,
        clock: PodClock,
        watch: PodWatch,
        names: set[str],
        report: Callable[[str], None],
        creating: asyncio.Task[None] | None = None,
    ) -> None:
        """Until every pod in ``names`` is bound, or nothing got bound for ``stall_timeout``."""
        last, last_change, shown = -1, time.monotonic(), 0.0
        while True:
            if creating is not None and creating.done() and creating.exception() is not None:
                raise creating.exception()  # type: ignore[misc]
            bound = clock.bound_count(names)
            now = time.monotonic()
            if bound != last:
                last, last_change = bound, now
            if bound >= len(names) or now - last_change > self.options.stall_timeout:
                return
            if now - shown >= 0.5:
                shown = now
                created = sum(1 for name in names if name in clock.created)
                report(f"{created}/{len(names)} created, {bound}/{len(names)} bound")
            watch.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watch.changed.wait(), timeout=0.5)

    async def _run(
        self, context: BenchContext, kind: str, groups: int, repeat: int, position: int
    ) -> GangRunRecord:
        options = self.options
        api = context.api
        namespace = f"bench-gang-{context.nodes}-{position}"
        prefix = f"{LABELS[kind][0]}{position}"
        sizes = gang_sizes(groups, options.gang_members, seed=context.nodes)
        podgroups, manifests = gang_manifests(prefix, sizes, SCHEDULER_NAME, seed=context.nodes * 1000 + 11)
        warm_groups, warm = gang_manifests(f"{prefix}-warm", [WARMUP_MEMBERS], SCHEDULER_NAME, seed=1)
        members = members_of(manifests)
        names = set(name for group in members.values() for name in group)
        config = gang_config(options.qps, options.burst)
        directory = options.workdir / f"gang-{context.nodes}"
        clock = PodClock()
        label = (
            f"{context.nodes:,} nodes · gangs · {LABELS[kind]} · run {position} "
            f"({groups} gangs, {len(names)} pods)"
        )
        with step(label, log_every=5.0) as progress:
            busy = await context.wait_quiet(progress.update)
            load = load_average()
            await ensure_namespace(api, namespace)
            progress.update("starting the scheduler")
            scheduler = await asyncio.to_thread(
                start_scheduler, kind, config, context.cluster.kubeconfig, directory, f"{prefix}-{kind}"
            )
            watch = PodWatch(api, namespace, clock)
            try:
                await watch.start()
                progress.update("warming up")
                await _create_each(api, podgroups_path(namespace), warm_groups)
                await create_pods(api, namespace, warm, clock, options.concurrency)
                await self._wait_bound(clock, watch, {m["metadata"]["name"] for m in warm}, progress.update)
                progress.update(f"creating {groups} PodGroups")
                await _create_each(api, podgroups_path(namespace), podgroups)
                await context.wait_quiet(progress.update)
                before_metrics = await asyncio.to_thread(_metrics, scheduler)
                before_cpu = cpu_seconds(context, scheduler)
                creating = asyncio.create_task(
                    create_pods(api, namespace, manifests, clock, options.concurrency)
                )
                await self._wait_bound(clock, watch, names, progress.update, creating)
                await creating
                after_cpu = await cpu_seconds_settled(context, scheduler)
                after_metrics = await asyncio.to_thread(_metrics, scheduler)
                listed = (await api.list_all(pods_path(namespace)))["items"]
            finally:
                await watch.stop()
                await asyncio.to_thread(scheduler.stop)
            record = gang_record(kind, context.nodes, repeat, position, clock, members, listed)
            record.busy_before, record.load_before, record.load_after = busy, load, load_average()
            record.idle_cpus = context.idle_cpus
            record.cpu_seconds = {name: after_cpu[name] - before_cpu[name] for name in after_cpu}
            record.scheduled_attempts = after_metrics["scheduled"] - before_metrics["scheduled"]
            record.failed_attempts = after_metrics["failed"] - before_metrics["failed"]
            progress.update(
                f"{record.complete_gangs}/{groups} gangs bound, {number(record.throughput, 1)} pods/s; "
                "cleaning up"
            )
            await delete_all_pods(api, namespace, options.concurrency)
            with contextlib.suppress(ApiError):
                await api.delete(f"/api/v1/namespaces/{namespace}")
        context.log(
            f"    {LABELS[kind]:>8}: {number(record.throughput, 1)} pods/s, every gang bound after "
            f"{number(record.all_bound, 2)} s, per gang p50 {milliseconds(record.p50)} ms, "
            f"p99 {milliseconds(record.p99)} ms, scheduler CPU "
            f"{number(record.cpu_ms_per_pod('scheduler'), 2)} ms/pod, "
            f"{len(record.partial)} gangs partly bound"
        )
        if record.complete_gangs < groups:
            context.log(
                f"    [red]only {record.complete_gangs} of {groups} gangs were fully bound; see "
                f"{scheduler.log}[/red]"
            )
        return record

    # -- reporting -----------------------------------------------------------------------------
    def best(self, nodes: int, kind: str) -> GangRunRecord | None:
        """The run with the highest throughput (runs with every gang bound first)."""
        runs = [r for r in self.records if r.nodes == nodes and r.kind == kind]
        if not runs:
            return None
        return max(
            runs,
            key=lambda r: (
                r.complete_gangs == r.groups,
                -math.inf if math.isnan(r.throughput) else r.throughput,
            ),
        )

    def render(self, run: RunInfo) -> str:
        options = self.options
        ours_version = self.versions.get("secondary-scheduler", "?")
        upstream_version = self.versions.get("upstream kube-scheduler (scheduler-plugins build)", "?")
        low, high = options.gang_members
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            f"Both schedulers run the same one-profile configuration (schedulerName `{SCHEDULER_NAME}`, "
            "the default plugins plus Coscheduling as scheduler-plugins documents it: queueSort "
            "Coscheduling in place of PrioritySort, and Coscheduling at preFilter, postFilter, permit and "
            "reserve, with its default args: permitWaitingTimeSeconds 60, podGroupBackoffSeconds 0, "
            f"podGroupRejectPercentage 10) with the same client limits, qps {options.qps:g} and burst "
            f"{options.burst}; ours is `{ours_version}`, upstream's kube-scheduler `{upstream_version}`. "
            f"Each gang is a PodGroup of {low}-{high} pods with minMember its size (no "
            "scheduleTimeoutSeconds, so the 60 s default) and pods like the throughput section's "
            "(100m-500m CPU, 128-512Mi), so every gang fits. The best of "
            f"{options.repeats} runs per scheduler and size (by throughput) is shown; every run is listed "
            "further down.",
            "",
            *self._load_note(run),
        ]
        for nodes in options.gang_sizes:
            lines += self._size_table(nodes)
        lines += self._all_runs()
        lines.append(self._method())
        return "\n".join(lines)

    def _load_note(self, run: RunInfo) -> list[str]:
        loads = [r.load_before for r in self.records] + [r.load_after for r in self.records]
        loads = [value for value in loads if not math.isnan(value)]
        if not loads:
            return []
        cpus = run.machine.cpus
        idle = max((r.idle_cpus for r in self.records if not math.isnan(r.idle_cpus)), default=math.nan)
        unsettled = [r for r in self.records if r.busy_before - r.idle_cpus >= self.options.quiet_margin]
        loaded = run.load_before > LOADED or (not math.isnan(idle) and idle > IDLE_BUSY) or bool(unsettled)
        text = (
            f"1-minute load average on the {cpus} CPUs: {run.load_before:.2f} when the benchmark began, "
            f"{min(loads):.2f}-{max(loads):.2f} at the starts and ends of this section's runs (the "
            "benchmark's own cluster counts in it too)."
        )
        if loaded:
            text += (
                " **These figures are from a machine shared with other work**"
                + (
                    f" (with the cluster idle, {idle:.2f} of its {cpus} CPUs were busy)"
                    if not math.isnan(idle)
                    else ""
                )
                + (
                    f" ({len(unsettled)} of {len(self.records)} runs started before the machine settled)"
                    if unsettled
                    else ""
                )
                + ": absolute numbers are lower than on an idle machine; the ratios compare runs made in "
                "ABBA order under the same conditions."
            )
        else:
            text += " The machine was otherwise quiet."
        return [text, ""]

    def _size_table(self, nodes: int) -> list[str]:
        ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
        if ours is None or theirs is None:
            return []

        def seconds(value: float) -> str:
            return number(value, 2)

        rows = [
            [
                label,
                number(record.throughput, 1),
                seconds(record.all_bound),
                milliseconds(record.p50),
                milliseconds(record.p99),
                number(record.cpu_ms_per_pod("scheduler"), 2),
                f"{record.complete_gangs:,}/{record.groups:,}",
                f"{len(record.partial)}",
            ]
            for label, record in (("ours", ours), ("upstream", theirs))
        ]
        ratios = [
            ratio(ours.throughput, theirs.throughput),
            ratio(ours.all_bound, theirs.all_bound),
            ratio(ours.p50, theirs.p50),
            ratio(ours.p99, theirs.p99),
            ratio(ours.cpu_ms_per_pod("scheduler"), theirs.cpu_ms_per_pod("scheduler")),
        ]
        rows.append(["ours / upstream", *(f"{number(value, 2)}×" for value in ratios), "", ""])
        header = [
            "scheduler",
            "pods/s",
            "every gang bound (s)",
            "gang p50 (ms)",
            "gang p99 (ms)",
            "scheduler CPU/pod (ms)",
            "gangs fully bound",
            "gangs partly bound",
        ]
        lines = [
            f"### {nodes:,} nodes, {ours.groups:,} gangs, {ours.pods:,} pods",
            "",
            "*gang p50/p99*: per gang, from its first pod created to its last pod bound. *gangs partly "
            "bound*: the placement check, gangs some but not all of whose pods were bound when the run "
            "ended (should be 0).",
            "",
            table(header, rows),
        ]
        partial = [f"{LABELS[r.kind]}: {text}" for r in (ours, theirs) for text in r.partial]
        if partial:
            lines += ["Partly bound gangs (first 10):", "", *(f"- {text}" for text in partial[:10]), ""]
        return lines

    def _all_runs(self) -> list[str]:
        rows = [
            [
                f"{r.nodes:,}",
                f"{r.order}",
                LABELS[r.kind],
                f"{r.complete_gangs:,}/{r.groups:,} gangs, {r.bound:,}/{r.pods:,} pods",
                number(r.throughput, 1),
                number(r.create_rate),
                number(r.all_bound, 2),
                milliseconds(r.p50),
                milliseconds(r.p99),
                f"{milliseconds(r.spread_p50)} / {milliseconds(r.spread_p99)}",
                number(r.failed_attempts),
                number(r.cpu_ms_per_pod("scheduler"), 2),
                f"{len(r.partial)}",
                f"{number(r.busy_before, 2)} ({number(r.idle_cpus, 2)})",
                f"{r.load_before:.2f} → {r.load_after:.2f}",
            ]
            for r in self.records
        ]
        header = [
            "nodes",
            "#",
            "scheduler",
            "bound",
            "pods/s",
            "created/s",
            "every gang bound (s)",
            "gang p50 (ms)",
            "gang p99 (ms)",
            "bind spread p50 / p99 (ms)",
            "unschedulable attempts",
            "sched CPU/pod (ms)",
            "partly bound",
            "busy before (idle)",
            "load",
        ]
        return [
            "### Every run",
            "",
            "In the order they ran. *created/s*: how fast the client created the pods. *bind spread*: per "
            "gang, from its first pod bound to its last (how together the gang went). *unschedulable "
            "attempts*: the scheduler's own count of attempts that did not place the pod (a gang's pods "
            "that come before their siblings are in the queue count here). *busy before*: CPUs the "
            "machine kept busy just before the run (in brackets: the idle cluster alone). *load*: the "
            "1-minute load average at the start and end of the run.",
            "",
            table(header, rows, align="rrllrrrrrrrrrrr"),
        ]

    def _method(self) -> str:
        options = self.options
        sizes = ", ".join(f"{size:,}" for size in options.gang_sizes)
        return f"""\
### Method

- The cluster and the scheduler processes are the throughput section's: at each size ({sizes} nodes
  here) both schedulers run in turn, {options.repeats} runs each in ABBA order, each a fresh process
  with the same flags and configuration, each waiting for its caches to sync; each run has a fresh
  namespace. The best run of each scheduler (by throughput) is shown above; every run is listed.
- A run schedules one warm-up gang of {WARMUP_MEMBERS} pods (not measured), creates every measured
  PodGroup and waits until the machine has settled, then creates all the gangs' pods, gang after
  gang, with {options.concurrency} requests in flight. Gang sizes are drawn with a fixed seed per
  cluster size, so both schedulers get the same gangs.
- *pods/s*: pods bound over the time from the first pod created to the last pod bound; *every gang
  bound*: that time, when every gang was fully bound. A pod is created when the create call returns
  or the watch shows it, whichever is first, and bound at the first watch event with
  `spec.nodeName`. Percentiles are nearest-rank over the gangs. *scheduler CPU/pod* is the
  scheduler process's user and system CPU time over the run, per pod bound.
- Placement check: when every pod is bound (or nothing more got bound for {options.stall_timeout:g} s),
  the pods are listed and every gang with some but not all of its pods bound is reported.
- Raw numbers of every run: `gang.json` in the run's working directory.
"""
