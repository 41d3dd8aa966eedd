"""PVC-bearing pods: ours against the upstream kube-scheduler, each pod with one WaitForFirstConsumer claim.

The same method as the throughput section (same cluster per size, same one-profile
configuration and client limits, ABBA order, fresh scheduler processes), with pods that
each mount one claim of the local cluster's ``local-wffc`` class. A run:

1. waits until the machine has settled, makes a fresh namespace and starts the scheduler;
2. schedules a few warm-up pods with claims (not measured);
3. creates the measured claims and waits until the client's watch has seen them all and the
   machine has settled again (kube-controller-manager records on each that it waits for a
   consumer);
4. creates the pods as fast as the client can, while watches on pods, claims and volumes
   note when each pod was created, when its claim got a node, was handed to the provisioner,
   got its PV and was Bound, and when the pod was bound;
5. checks every pod against its PV (the PV's node affinity must name the pod's node);
6. stops the scheduler, deletes pods and claims and waits until the provisioner has deleted
   the PVs and given the nodes' capacity back, so the next run starts with the same room.

Once per size, before the first and after the last scheduler run, the storage stack alone is
timed: claims created with ``volume.kubernetes.io/selected-node`` already set, as if a
scheduler had chosen, provisioned and bound with no scheduler running. That is the most any
scheduler could reach, and tells whether the provisioner or the scheduler set the pace.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import asdict

from bench import storage
from bench.claims import PVS, claims_path, clean_up, wait_published
from bench.context import BenchContext, BenchOptions
from bench.machine import component_versions, load_average
from bench.measuring import (
    COMPONENTS as SCHEDULER_COMPONENTS,
)
from bench.measuring import (
    LABELS,
    SCHEDULER_NAME,
    abba,
    bench_config,
    cpu_seconds,
    cpu_seconds_settled,
    read_counters,
    started_scheduler,
    wait_for_progress,
)
from bench.objects import ObjectWatch, create_objects
from bench.report import milliseconds, number
from bench.stats import PodClock, Timings, percentile
from bench.volumes_report import STORAGE, WARMUP_PODS, StorageRecord, VolumeRunRecord, VolumesReport
from bench.workload import create_pods, pods_path
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.namespaces import ensure_namespace
from secsched_devtools.cluster.localcluster import PROVISIONER
from secsched_devtools.cluster.progress import step

COMPONENTS = (*SCHEDULER_COMPONENTS, PROVISIONER)
"""The cluster's processes whose CPU a run reads: the throughput section's and the provisioner."""


class VolumesSection(VolumesReport):
    """Measures PVC-bearing pods; ``VolumesReport`` writes what it measured."""

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records = []
        self.storage_records = []
        self.cleanups = []
        self.versions = {}

    async def measure(self, context: BenchContext) -> None:
        if context.nodes not in self.options.volume_sizes:
            return
        self.versions = component_versions()
        options = self.options
        pods = options.volume_pods_for(context.nodes)
        await wait_published(context)
        position = 1
        self.storage_records.append(await self._storage_alone(context, pods, position))
        self._save()
        for repeat, kind in abba(options.repeats):
            position += 1
            self.records.append(await self._run(context, kind, pods, repeat, position))
            self._save()
        position += 1
        self.storage_records.append(await self._storage_alone(context, pods, position))
        self._save()

    def _save(self) -> None:
        raw = {
            "runs": [asdict(record) for record in self.records],
            "storage_alone": [asdict(record) for record in self.storage_records],
            "cleanup_seconds": self.cleanups,
            "versions": self.versions,
        }
        (self.options.workdir / "volumes.json").write_text(json.dumps(raw, indent=1))

    async def _storage_alone(self, context: BenchContext, count: int, position: int) -> StorageRecord:
        """Claims with a node already chosen (round robin over the nodes), no scheduler: how fast
        the provisioner and kube-controller-manager make and bind volumes."""
        options = self.options
        namespace = f"bench-vol-{context.nodes}-{position}-storage"
        nodes = sorted(
            (node["metadata"]["name"] for node in (await context.api.list_all("/api/v1/nodes"))["items"]),
            key=lambda name: (len(name), name),
        )
        names = [f"s{position}-{index:05d}" for index in range(count)]
        manifests = storage.claim_manifests(names, seed=context.nodes, selected_nodes=nodes)
        clock = storage.ClaimClock()
        changed = asyncio.Event()
        with step(
            f"{context.nodes:,} nodes · {STORAGE} · run {position} ({count} claims)", log_every=5
        ) as progress:
            busy = await context.wait_quiet(progress.update)
            load = load_average()
            await ensure_namespace(context.api, namespace)
            watches = [
                ObjectWatch(context.api, claims_path(namespace), clock.saw_claim, changed),
                ObjectWatch(context.api, PVS, lambda obj, at: clock.saw_volume(obj, at, namespace), changed),
            ]
            try:
                for watch in watches:
                    await watch.start()
                before = cpu_seconds(context, None, COMPONENTS)
                creating = asyncio.create_task(
                    create_objects(
                        context.api,
                        claims_path(namespace),
                        manifests,
                        options.concurrency,
                        clock.create_returned,
                    )
                )
                await wait_for_progress(
                    lambda: (clock.bound_count(names), len(names)),
                    lambda: f"{clock.bound_count(names)}/{count} claims Bound",
                    changed,
                    progress.update,
                    options.stall_timeout,
                    creating,
                )
                await creating
                after = cpu_seconds(context, None, COMPONENTS)
            finally:
                for watch in watches:
                    await watch.stop()
            rate, latencies = storage.storage_rate(clock, names)
            created = [clock.created[name] for name in names if name in clock.created]
            bound = [clock.bound[name] for name in names if name in clock.bound]
            record = StorageRecord(
                nodes=context.nodes,
                order=position,
                claims=count,
                bound=len(bound),
                rate=rate,
                p50=percentile(latencies, 0.5),
                p99=percentile(latencies, 0.99),
                span=max(bound) - min(created) if bound and created else math.nan,
                phases=storage.phases(None, clock, names),
                cpu_seconds={name: after[name] - before[name] for name in after},
                busy_before=busy,
                load_before=load,
            )
            progress.update(f"{record.bound}/{count} Bound: {number(rate, 1)} claims/s; cleaning up")
            self.cleanups.append(await clean_up(context.api, namespace, options.concurrency, progress.update))
        context.log(
            f"    {STORAGE}: {number(rate, 1)} claims/s, p50 {milliseconds(record.p50)} ms, "
            f"p99 {milliseconds(record.p99)} ms; provisioner busy "
            f"{number(record.cpu_share(PROVISIONER), 2)} CPUs"
        )
        return record

    async def _run(
        self, context: BenchContext, kind: str, pods: int, repeat: int, position: int
    ) -> VolumeRunRecord:
        options = self.options
        api = context.api
        namespace = f"bench-vol-{context.nodes}-{position}"
        prefix = f"{LABELS[kind][0]}{position}"
        manifests = storage.volume_pod_manifests(prefix, pods, SCHEDULER_NAME, seed=context.nodes * 1000 + 7)
        names = [manifest["metadata"]["name"] for manifest in manifests]
        claims = storage.claim_manifests(names, seed=context.nodes)
        warm = storage.volume_pod_manifests(f"{prefix}-warm", WARMUP_PODS, SCHEDULER_NAME, seed=1)
        warm_names = [manifest["metadata"]["name"] for manifest in warm]
        warm_claims = storage.claim_manifests(warm_names, seed=1)
        config = bench_config(options.qps, options.burst, context.cluster.kubeconfig)
        directory = options.workdir / f"volumes-{context.nodes}"
        pod_clock = PodClock()
        claim_clock = storage.ClaimClock()
        changed = asyncio.Event()

        def pod_seen(pod: JSON, at: float) -> None:
            pod_clock.saw(str(pod["metadata"]["name"]), at, (pod.get("spec") or {}).get("nodeName"))

        async def wait_done(group: list[str], creating: asyncio.Task[None] | None = None) -> None:
            """Until every pod of ``group`` is bound and its claim Bound (or the stall rule)."""

            def done() -> tuple[int, int]:
                bound = pod_clock.bound_count(set(group))
                chosen = sum(1 for name in group if name in claim_clock.selected)
                return min(bound, claim_clock.bound_count(group)) + chosen, 2 * len(group)

            def describe() -> str:
                return (
                    f"{sum(1 for name in group if name in pod_clock.created)}/{len(group)} created, "
                    f"{sum(1 for name in group if name in claim_clock.selected)} claims with a node, "
                    f"{claim_clock.bound_count(group)} Bound, {pod_clock.bound_count(set(group))} pods bound"
                )

            await wait_for_progress(done, describe, changed, progress.update, options.stall_timeout, creating)

        label = f"{context.nodes:,} nodes · PVC pods · {LABELS[kind]} · run {position} ({pods} pods)"
        with step(label, log_every=5.0) as progress:
            await ensure_namespace(api, namespace)
            async with started_scheduler(
                context, kind, config, directory, f"{prefix}-{kind}", progress.update
            ) as run:
                scheduler, busy, load = run.scheduler, run.busy_before, run.load_before
                watches = [
                    ObjectWatch(api, pods_path(namespace), pod_seen, changed),
                    ObjectWatch(api, claims_path(namespace), claim_clock.saw_claim, changed),
                    ObjectWatch(
                        api, PVS, lambda obj, at: claim_clock.saw_volume(obj, at, namespace), changed
                    ),
                ]
                try:
                    for watch in watches:
                        await watch.start()
                    progress.update("warming up")
                    await create_objects(api, claims_path(namespace), warm_claims, options.concurrency)
                    await create_pods(api, namespace, warm, pod_clock, options.concurrency)
                    await wait_done(warm_names)
                    progress.update(f"creating {pods} claims")
                    await create_objects(
                        api, claims_path(namespace), claims, options.concurrency, claim_clock.create_returned
                    )
                    await wait_for_progress(
                        lambda: (sum(1 for n in names if n in claim_clock.created), len(names)),
                        lambda: "waiting for the claims",
                        changed,
                        progress.update,
                        options.stall_timeout,
                    )
                    await context.wait_quiet(progress.update)
                    before_metrics = await asyncio.to_thread(read_counters, scheduler)
                    before_cpu = cpu_seconds(context, scheduler, COMPONENTS)
                    creating = asyncio.create_task(
                        create_pods(api, namespace, manifests, pod_clock, options.concurrency)
                    )
                    await wait_done(names, creating)
                    await creating
                    after_cpu = await cpu_seconds_settled(context, scheduler, COMPONENTS)
                    after_metrics = await asyncio.to_thread(read_counters, scheduler)
                    listed_pods = (await api.list_all(pods_path(namespace)))["items"]
                    listed_claims = (await api.list_all(claims_path(namespace)))["items"]
                    listed_volumes = (await api.list_all(PVS))["items"]
                finally:
                    for watch in watches:
                        await watch.stop()
            load_after = load_average()
            timings = pod_clock.summary(names)
            record = self._record(
                kind, context.nodes, repeat, position, timings, pod_clock, claim_clock, names
            )
            measured = set(names)
            found = storage.placements(
                [pod for pod in listed_pods if pod["metadata"]["name"] in measured],
                listed_claims,
                listed_volumes,
            )
            record.violations = storage.violations(found)
            record.moved = sum(1 for p in found if p.node and p.selected_node and p.node != p.selected_node)
            record.busy_before, record.load_before, record.load_after = busy, load, load_after
            record.idle_cpus = context.idle_cpus
            record.add_span((before_cpu, after_cpu), (before_metrics, after_metrics))
            progress.update(
                f"{record.bound}/{pods} pods bound, {record.claims_bound} claims Bound: "
                f"{number(record.throughput, 1)} pods/s; cleaning up"
            )
            self.cleanups.append(await clean_up(api, namespace, options.concurrency, progress.update))
        context.log(
            f"    {LABELS[kind]:>8}: {number(record.throughput, 1)} pods/s (claims given a node at "
            f"{number(record.phases.decided_rate, 1)}/s, Bound at "
            f"{number(record.phases.provisioned_rate, 1)}/s), "
            f"p50 {milliseconds(record.p50)} ms, p99 {milliseconds(record.p99)} ms, scheduler CPU "
            f"{number(record.cpu_ms_per_pod('scheduler'), 2)} ms/pod, provisioner busy "
            f"{number(record.cpu_share(PROVISIONER), 2)} CPUs, {len(record.violations)} misplaced volumes"
        )
        if record.bound < pods or record.claims_bound < pods:
            context.log(
                f"    [red]only {record.bound}/{pods} pods bound and {record.claims_bound}/{pods} "
                "claims Bound; "
                f"see {scheduler.log} and the cluster's logs/storage-provisioner.log[/red]"
            )
        for violation in record.violations[:5]:
            context.log(f"    [red]{violation}[/red]")
        return record

    @staticmethod
    def _record(
        kind: str,
        nodes: int,
        repeat: int,
        position: int,
        timings: Timings,
        pod_clock: PodClock,
        claim_clock: storage.ClaimClock,
        names: list[str],
    ) -> VolumeRunRecord:
        bound_at = [claim_clock.bound[name] for name in names if name in claim_clock.bound]
        end = (
            max([timings.last_bound, *bound_at])
            if bound_at and not math.isnan(timings.last_bound)
            else math.nan
        )
        span = end - timings.first_created
        throughput = timings.bound / span if span > 0 else math.nan
        return VolumeRunRecord(
            kind=kind,
            nodes=nodes,
            repeat=repeat,
            order=position,
            pods=timings.pods,
            bound=timings.bound,
            claims_bound=len(bound_at),
            throughput=throughput,
            create_rate=timings.create_rate,
            p50=timings.p50,
            p99=timings.p99,
            max_latency=timings.max_latency,
            span=span,
            phases=storage.phases(pod_clock, claim_clock, names),
        )
