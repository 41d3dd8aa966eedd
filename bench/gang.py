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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict

from bench.context import BenchContext, BenchOptions
from bench.gang_report import WARMUP_MEMBERS, GangReport, GangRunRecord
from bench.machine import component_versions, load_average
from bench.measuring import (
    LABELS,
    SCHEDULER_NAME,
    abba,
    cpu_seconds,
    cpu_seconds_settled,
    read_counters,
    started_scheduler,
    wait_bound,
)
from bench.report import milliseconds, number
from bench.stats import PodClock, percentile
from bench.workload import PodWatch, create_pods, delete_all_pods, pod_manifests, pods_path
from secondary_scheduler.kube.client import JSON, ApiClient, ApiError
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.plugins.coscheduling.podgroup import POD_GROUP_LABEL
from secsched_devtools.cluster.progress import step
from secsched_devtools.cluster.schedulers import COSCHEDULING_PROFILE, scheduler_config


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


class GangSection(GangReport):
    """Measures many PodGroups submitted at once; ``GangReport`` writes what it measured."""

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records = []
        self.versions = {}

    async def measure(self, context: BenchContext) -> None:
        if context.nodes not in self.options.gang_sizes:
            return
        self.versions = component_versions()
        groups = self.options.gang_groups_for(context.nodes)
        for position, (repeat, kind) in enumerate(abba(self.options.repeats), start=1):
            self.records.append(await self._run(context, kind, groups, repeat, position))
            self._save()

    def _save(self) -> None:
        raw = {"runs": [asdict(record) for record in self.records], "versions": self.versions}
        (self.options.workdir / "gang.json").write_text(json.dumps(raw, indent=1))

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

        def created_of(pods: Sequence[JSON]) -> Callable[[], int]:
            return lambda: sum(1 for pod in pods if pod["metadata"]["name"] in clock.created)

        label = (
            f"{context.nodes:,} nodes · gangs · {LABELS[kind]} · run {position} "
            f"({groups} gangs, {len(names)} pods)"
        )
        with step(label, log_every=5.0) as progress:
            await ensure_namespace(api, namespace)
            async with started_scheduler(
                context, kind, config, directory, f"{prefix}-{kind}", progress.update
            ) as run:
                scheduler, busy, load = run.scheduler, run.busy_before, run.load_before
                watch = PodWatch(api, namespace, clock)
                try:
                    await watch.start()
                    progress.update("warming up")
                    await _create_each(api, podgroups_path(namespace), warm_groups)
                    await create_pods(api, namespace, warm, clock, options.concurrency)
                    await wait_bound(
                        clock,
                        watch.changed,
                        {m["metadata"]["name"] for m in warm},
                        progress.update,
                        options.stall_timeout,
                        created_of(warm),
                    )
                    progress.update(f"creating {groups} PodGroups")
                    await _create_each(api, podgroups_path(namespace), podgroups)
                    await context.wait_quiet(progress.update)
                    before_metrics = await asyncio.to_thread(read_counters, scheduler)
                    before_cpu = cpu_seconds(context, scheduler)
                    creating = asyncio.create_task(
                        create_pods(api, namespace, manifests, clock, options.concurrency)
                    )
                    await wait_bound(
                        clock,
                        watch.changed,
                        names,
                        progress.update,
                        options.stall_timeout,
                        created_of(manifests),
                        creating,
                    )
                    await creating
                    after_cpu = await cpu_seconds_settled(context, scheduler)
                    after_metrics = await asyncio.to_thread(read_counters, scheduler)
                    listed = (await api.list_all(pods_path(namespace)))["items"]
                finally:
                    await watch.stop()
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
