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
import contextlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from bench import storage
from bench.context import BenchContext, BenchOptions
from bench.machine import component_versions, load_average
from bench.report import comparison_rows, milliseconds, number, table
from bench.sections import RunInfo
from bench.stats import PodClock, RunMeasures, Timings, percentile, ratio
from bench.throughput import (
    LABELS,
    SCHEDULER_NAME,
    _metrics,
    bench_config,
    cpu_seconds,
    cpu_seconds_settled,
)
from bench.workload import JSON, create_pods, delete_all_pods, pods_path
from secondary_scheduler.cluster import provisioner
from secondary_scheduler.cluster.localcluster import PROVISIONER
from secondary_scheduler.cluster.progress import step
from secondary_scheduler.cluster.schedulers import OURS, UPSTREAM, start_scheduler
from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.namespaces import ensure_namespace

COMPONENTS = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager", PROVISIONER)
WARMUP_PODS = 10
LOADED = 1.0
"""A 1-minute load above this before the cluster started means other work was running."""
IDLE_BUSY = 0.5
"""CPUs busy with the cluster idle above which other work was running (the cluster alone: about 0.1)."""
STORAGE = "storage alone"
PVS = provisioner.PVS


def claims_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"


@dataclass(kw_only=True)
class VolumeRunRecord(RunMeasures):
    """One scheduler's one run at one size; ``throughput`` counts pods from the first created to
    the last pod bound and last claim Bound."""

    claims_bound: int
    phases: storage.Phases = field(default_factory=storage.Phases)
    violations: list[str] = field(default_factory=list)
    moved: int = 0
    """Pods bound elsewhere than the node first written on their claim (the provisioner refused it)."""
    load_after: float = math.nan

    def cpu_share(self, process: str) -> float:
        """CPUs the process kept busy on average over the run's span."""
        seconds = self.cpu_seconds.get(process)
        return math.nan if seconds is None or not self.span > 0 else seconds / self.span


@dataclass
class StorageRecord:
    """The storage stack alone at one size: claims with a node already chosen, no scheduler."""

    nodes: int
    order: int
    claims: int
    bound: int
    rate: float
    p50: float
    p99: float
    span: float
    phases: storage.Phases = field(default_factory=storage.Phases)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    busy_before: float = math.nan
    load_before: float = math.nan

    def cpu_share(self, process: str) -> float:
        seconds = self.cpu_seconds.get(process)
        return math.nan if seconds is None or not self.span > 0 else seconds / self.span


# -- watching and writing --------------------------------------------------------------------
class ObjectWatch:
    """Calls ``seen(object, monotonic time)`` for every ADDED or MODIFIED event of a collection."""

    def __init__(
        self, api: ApiClient, path: str, seen: Callable[[JSON, float], None], changed: asyncio.Event
    ) -> None:
        self.api = api
        self.path = path
        self.seen = seen
        self.changed = changed
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listing = await self.api.get(self.path, {"limit": 1})
        version = str(listing.get("metadata", {}).get("resourceVersion", ""))
        self._task = asyncio.create_task(self._run(version), name=f"watch-{self.path}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, version: str) -> None:
        while True:
            params = {"resourceVersion": version, "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
            try:
                async for event in self.api.watch(self.path, params):
                    now = time.monotonic()
                    obj = event.get("object") or {}
                    version = str((obj.get("metadata") or {}).get("resourceVersion", version))
                    kind = event.get("type")
                    if kind == "ERROR":
                        raise RuntimeError(
                            f"the benchmark's watch on {self.path} failed: {obj.get('message')}"
                        )
                    if kind in ("ADDED", "MODIFIED"):
                        self.seen(obj, now)
                        self.changed.set()
            except ApiUnavailable:
                await asyncio.sleep(0.2)  # resume from the last version seen


async def create_objects(
    api: ApiClient,
    path: str,
    manifests: Sequence[JSON],
    concurrency: int,
    on_created: Callable[[str, float], None] | None = None,
) -> None:
    """Create the objects in order with at most ``concurrency`` requests in flight."""
    pending = iter(manifests)

    async def worker() -> None:
        for manifest in pending:
            await api.create(path, manifest)
            if on_created is not None:
                on_created(manifest["metadata"]["name"], time.monotonic())

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))


async def _delete_each(api: ApiClient, path: str, names: Sequence[str], concurrency: int) -> None:
    pending = iter(names)

    async def worker() -> None:
        for name in pending:
            try:
                await api.delete(f"{path}/{name}")
            except ApiError as error:
                if not error.not_found:
                    raise

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))


async def capacity_restored(api: ApiClient) -> tuple[int, int]:
    """(nodes whose ``local-wffc`` CSIStorageCapacity is below their whole pool or missing, nodes)."""
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    published = {
        ((item.get("nodeTopology") or {}).get("matchLabels") or {}).get(provisioner.HOSTNAME_KEY): item
        for item in (await api.list_all(provisioner.CAPACITIES))["items"]
        if item.get("storageClassName") == provisioner.LOCAL_CLASS
    }
    short = 0
    for node in nodes:
        name = node["metadata"]["name"]
        item = published.get(name)
        if item is None or provisioner._bytes(item.get("capacity"), -1) < provisioner.node_storage(node):
            short += 1
    return short, len(nodes)


async def storage_published(api: ApiClient) -> tuple[int, int]:
    """(nodes with a CSINode of our driver and a ``local-wffc`` capacity, nodes)."""
    nodes = {node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"]}
    with_driver = {
        item["metadata"]["name"]
        for item in (await api.list_all(provisioner.CSINODES))["items"]
        if any(driver.get("name") == provisioner.LOCAL for driver in item["spec"].get("drivers") or [])
    }
    short, _ = await capacity_restored(api)
    return len(nodes & with_driver) - short, len(nodes)


async def delete_claims(
    api: ApiClient, namespace: str, concurrency: int, report: Callable[[str], None], timeout: float = 600.0
) -> None:
    """Delete the namespace's claims; wait until their PVs are gone and every node's capacity is whole."""
    path = claims_path(namespace)
    deadline = time.monotonic() + timeout
    claims = [item["metadata"]["name"] for item in (await api.list_all(path))["items"]]
    report(f"deleting {len(claims)} claims")
    await _delete_each(api, path, claims, concurrency)
    while True:
        left = len((await api.list_all(path))["items"])
        volumes = [
            volume
            for volume in (await api.list_all(PVS))["items"]
            if ((volume.get("spec") or {}).get("claimRef") or {}).get("namespace") == namespace
        ]
        short = 0
        if not left and not volumes:
            short, _ = await capacity_restored(api)
            if not short:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"cleaning up {namespace}: after {timeout:.0f}s, {left} claims, {len(volumes)} PVs left, "
                f"{short} nodes without their whole capacity; see the cluster's logs/storage-provisioner.log"
            )
        report(f"waiting: {left} claims, {len(volumes)} PVs left, {short} nodes' capacity not yet back")
        await asyncio.sleep(1.0)


async def clean_up(
    api: ApiClient, namespace: str, concurrency: int, report: Callable[[str], None], timeout: float = 600.0
) -> float:
    """Delete the namespace's pods and claims, wait until their PVs are gone and every node's
    capacity is whole again, then delete the namespace. Returns the seconds it took."""
    started = time.monotonic()
    report("deleting the pods")
    await delete_all_pods(api, namespace, concurrency, timeout)
    await delete_claims(api, namespace, concurrency, report, max(1.0, started + timeout - time.monotonic()))
    with contextlib.suppress(ApiError):
        await api.delete(f"/api/v1/namespaces/{namespace}")
    return time.monotonic() - started


# -- the section ---------------------------------------------------------------------------
class VolumesSection:
    name = "volumes"
    title = "PVC-bearing pods"

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records: list[VolumeRunRecord] = []
        self.storage_records: list[StorageRecord] = []
        self.cleanups: list[float] = []
        self.versions: dict[str, str] = {}

    # -- measuring -------------------------------------------------------------------------
    async def measure(self, context: BenchContext) -> None:
        if context.nodes not in self.options.volume_sizes:
            return
        self.versions = component_versions()
        options = self.options
        pods = options.volume_pods_for(context.nodes)
        with step(f"{context.nodes:,} nodes · every node's CSINode and CSIStorageCapacity", log_every=10):
            await self._wait_published(context)
        position = 0
        position += 1
        self.storage_records.append(await self._storage_alone(context, pods, position))
        self._save()
        for repeat in range(options.repeats):
            order = (UPSTREAM, OURS) if repeat % 2 == 0 else (OURS, UPSTREAM)
            for kind in order:
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

    @staticmethod
    async def _wait_published(context: BenchContext, timeout: float = 600.0) -> None:
        """Until the provisioner has made every node's CSINode and capacity (new nodes need them)."""
        deadline = time.monotonic() + timeout
        while True:
            ready, total = await storage_published(context.api)
            if ready >= total:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {ready}/{total} nodes have their CSINode and CSIStorageCapacity")
            context.log(f"    {ready:,}/{total:,} nodes have their CSINode and CSIStorageCapacity")
            await asyncio.sleep(3.0)

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
                await self._wait(
                    lambda: (
                        clock.bound_count(names),
                        len(names),
                        f"{clock.bound_count(names)}/{count} claims Bound",
                    ),
                    changed,
                    progress.update,
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

    async def _wait(
        self,
        progress_of: Callable[[], tuple[int, int, str]],
        changed: asyncio.Event,
        report: Callable[[str], None],
        creating: asyncio.Task[None] | None = None,
    ) -> None:
        """Until ``progress_of()`` says done (count >= total), or it stood still for ``stall_timeout``."""
        last, last_change, shown = -1, time.monotonic(), 0.0
        while True:
            if creating is not None and creating.done() and creating.exception() is not None:
                raise creating.exception()  # type: ignore[misc]
            done, total, text = progress_of()
            now = time.monotonic()
            if done != last:
                last, last_change = done, now
            if done >= total or now - last_change > self.options.stall_timeout:
                return
            if now - shown >= 0.5:
                shown = now
                report(text)
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout=0.5)

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

        def progress_of(group: list[str]) -> Callable[[], tuple[int, int, str]]:
            def measure() -> tuple[int, int, str]:
                bound = pod_clock.bound_count(set(group))
                claims_bound = claim_clock.bound_count(group)
                chosen = sum(1 for name in group if name in claim_clock.selected)
                text = (
                    f"{sum(1 for name in group if name in pod_clock.created)}/{len(group)} created, "
                    f"{chosen} claims with a node, {claims_bound} Bound, {bound} pods bound"
                )
                return min(bound, claims_bound) + chosen, 2 * len(group), text

            return measure

        label = f"{context.nodes:,} nodes · PVC pods · {LABELS[kind]} · run {position} ({pods} pods)"
        with step(label, log_every=5.0) as progress:
            busy = await context.wait_quiet(progress.update)
            load = load_average()
            await ensure_namespace(api, namespace)
            progress.update("starting the scheduler")
            scheduler = await asyncio.to_thread(
                start_scheduler, kind, config, context.cluster.kubeconfig, directory, f"{prefix}-{kind}"
            )
            watches = [
                ObjectWatch(api, pods_path(namespace), pod_seen, changed),
                ObjectWatch(api, claims_path(namespace), claim_clock.saw_claim, changed),
                ObjectWatch(api, PVS, lambda obj, at: claim_clock.saw_volume(obj, at, namespace), changed),
            ]
            try:
                for watch in watches:
                    await watch.start()
                progress.update("warming up")
                await create_objects(api, claims_path(namespace), warm_claims, options.concurrency)
                await create_pods(api, namespace, warm, pod_clock, options.concurrency)
                await self._wait(progress_of(warm_names), changed, progress.update)
                progress.update(f"creating {pods} claims")
                await create_objects(
                    api, claims_path(namespace), claims, options.concurrency, claim_clock.create_returned
                )
                await self._wait(
                    lambda: (
                        sum(1 for n in names if n in claim_clock.created),
                        len(names),
                        "waiting for the claims",
                    ),
                    changed,
                    progress.update,
                )
                await context.wait_quiet(progress.update)
                before_metrics = await asyncio.to_thread(_metrics, scheduler)
                before_cpu = cpu_seconds(context, scheduler, COMPONENTS)
                creating = asyncio.create_task(
                    create_pods(api, namespace, manifests, pod_clock, options.concurrency)
                )
                await self._wait(progress_of(names), changed, progress.update, creating)
                await creating
                after_cpu = await cpu_seconds_settled(context, scheduler, COMPONENTS)
                after_metrics = await asyncio.to_thread(_metrics, scheduler)
                listed_pods = (await api.list_all(pods_path(namespace)))["items"]
                listed_claims = (await api.list_all(claims_path(namespace)))["items"]
                listed_volumes = (await api.list_all(PVS))["items"]
            finally:
                for watch in watches:
                    await watch.stop()
                await asyncio.to_thread(scheduler.stop)
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

    # -- reporting ---------------------------------------------------------------------------
    def best(self, nodes: int, kind: str) -> VolumeRunRecord | None:
        """The run with the highest throughput (complete runs first)."""
        runs = [r for r in self.records if r.nodes == nodes and r.kind == kind]
        if not runs:
            return None
        return max(
            runs,
            key=lambda r: (
                r.bound == r.pods and r.claims_bound == r.pods,
                -math.inf if math.isnan(r.throughput) else r.throughput,
            ),
        )

    def render(self, run: RunInfo) -> str:
        options = run.options
        lines = [f"## {self.title}", "", run.measured(), "", *self._load_note(run), self._what(), ""]
        summary = []
        for nodes in options.volume_sizes:
            ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
            if ours is None or theirs is None:
                continue
            rates = self.storage_rates(nodes)
            summary.append(
                [
                    f"{nodes:,}",
                    f"{ours.pods:,}",
                    number(ours.throughput, 1),
                    number(theirs.throughput, 1),
                    f"**{number(ratio(ours.throughput, theirs.throughput), 2)}×**",
                    " / ".join(number(rate, 1) for rate in rates) or "–",
                    "; ".join(f"{LABELS[r.kind]}: {self._setter(r, rates)}" for r in (ours, theirs)),
                ]
            )
        if summary:
            header = [
                "nodes",
                "pods",
                "ours (pods/s)",
                "upstream (pods/s)",
                "ours / upstream",
                "storage alone (claims/s)",
                "pace set by",
            ]
            lines += ["### Summary", "", table(header, summary, align="rrrrrrl")]
        for nodes in options.volume_sizes:
            lines += self._pace(nodes)
            lines += self._size_tables(nodes)
        lines += self._all_runs()
        lines.append(self._method())
        return "\n".join(lines)

    def storage_rates(self, nodes: int) -> list[float]:
        """The storage stack alone's claims/s at this size, in the order measured."""
        return [r.rate for r in self.storage_records if r.nodes == nodes]

    @staticmethod
    def _setter(record: VolumeRunRecord, rates: Sequence[float]) -> str:
        setter = storage.pace_setter(record.throughput, record.phases.decided_rate, rates)
        return {"storage": "storage stack", "scheduler": "scheduler", "both": "both"}[setter]

    def _pace(self, nodes: int) -> list[str]:
        ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
        if ours is None or theirs is None:
            return []
        rates = self.storage_rates(nodes)
        runs: list[VolumeRunRecord | StorageRecord] = [*self.records, *self.storage_records]
        busiest = max((r.cpu_share(PROVISIONER) for r in runs if r.nodes == nodes), default=math.nan)
        sentences = [
            storage.pace_sentence(
                LABELS[r.kind], r.throughput, r.phases, r.cpu_ms_per_pod("scheduler"), rates
            )
            for r in (ours, theirs)
        ]
        return [
            f"### Who set the pace at {nodes:,} nodes",
            "",
            *(f"- {sentence}" for sentence in sentences),
            f"- The provisioner process kept at most {number(busiest, 2)} CPUs busy over any run (1.00 "
            "would be one Python process saturated); the storage stack's time goes to round trips: "
            "kube-controller-manager's PV controller handing each claim over and binding it, and the "
            "provisioner creating each PV and its Event in turn.",
            "",
        ]

    def _load_note(self, run: RunInfo) -> list[str]:
        loads = [r.load_before for r in self.records] + [r.load_after for r in self.records]
        loads += [r.load_before for r in self.storage_records]
        loads = [value for value in loads if not math.isnan(value)]
        if not loads:
            return []
        cpus = run.machine.cpus
        unsettled = [r for r in self.records if r.busy_before - r.idle_cpus >= self.options.quiet_margin]
        idle = max((r.idle_cpus for r in self.records if not math.isnan(r.idle_cpus)), default=math.nan)
        # The load during the runs counts the benchmark's own cluster; what says other work ran is
        # the load before the cluster started, the idle cluster's machine being busy, or unsettled runs.
        loaded = run.load_before > LOADED or (not math.isnan(idle) and idle > IDLE_BUSY) or bool(unsettled)
        text = (
            f"1-minute load average on the {cpus} CPUs: {run.load_before:.2f} when the benchmark began, "
            f"{min(loads):.2f}-{max(loads):.2f} at the starts and ends of this section's runs (the "
            "benchmark's own cluster counts in it too)."
        )
        if loaded:
            text += (
                " **These figures are from a loaded machine**: other work ran beside the benchmark"
                + (
                    f" (with the cluster idle, the machine kept {idle:.2f} of its {cpus} CPUs busy)"
                    if not math.isnan(idle)
                    else ""
                )
                + (
                    f" ({len(unsettled)} of {len(self.records)} runs started before the machine settled, "
                    "see *busy before* below)"
                    if unsettled
                    else ""
                )
                + ". Absolute numbers are lower than on an idle machine; the ratios compare runs made "
                "in ABBA order under the same conditions."
            )
        else:
            text += " The machine was otherwise quiet."
        return [text, ""]

    def _what(self) -> str:
        ours = self.versions.get("secondary-scheduler", "?")
        upstream = self.versions.get("upstream kube-scheduler (scheduler-plugins build)", "?")
        sizes = ", ".join(sorted(set(storage.CLAIM_SIZES), key=lambda size: int(size.rstrip("Gi"))))
        return (
            "**What this measures.** Each pod mounts one PersistentVolumeClaim of the local cluster's "
            f"`{storage.STORAGE_CLASS}` class: WaitForFirstConsumer, node-local volumes made by the "
            "cluster's own provisioner once a scheduler has chosen a node, each node's free storage "
            "published as a CSIStorageCapacity and its volume limit in its CSINode (what a KubeVirt VM "
            "with a disk on hostpath-provisioner, LVMS or TopoLVM asks of a scheduler). VolumeBinding's "
            "Filter checks each node's free storage and NodeVolumeLimits its volume count; PreBind writes "
            "`volume.kubernetes.io/selected-node` on the claim, then waits, polling once a second (both "
            "schedulers), until the provisioner has made the PV and kube-controller-manager has bound it; "
            "only then is the pod bound. A pod is done when it is bound and its claim Bound, so its "
            "latency includes the storage stack's work (the same for both schedulers) and throughput can "
            "be set by the storage stack rather than the scheduler: *storage alone* is how fast claims "
            "with a node already chosen get Bound with no scheduler running, and the tables below split "
            "each pod's time into the scheduler's steps and the storage stack's. Both schedulers run the "
            f"throughput section's configuration (schedulerName `{SCHEDULER_NAME}`, the default plugins, "
            f"volume plugins included, qps {self.options.qps:g}, burst {self.options.burst}); ours is "
            f"`{ours}`, upstream's kube-scheduler `{upstream}`. Claims ask for {sizes}; every node has "
            f"the provisioner's default pool ({provisioner.DEFAULT_STORAGE}) and volume limit "
            f"({provisioner.DEFAULT_MAX_VOLUMES}), so all fit."
        )

    def _size_tables(self, nodes: int) -> list[str]:
        ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
        if ours is None or theirs is None:
            return []
        rows = comparison_rows(
            ours,
            theirs,
            lambda record: [
                f"{record.bound:,}/{record.pods:,}",
                f"{record.claims_bound:,}/{record.pods:,}",
                f"{len(record.violations)}",
            ],
        )
        header = [
            "scheduler",
            "pods/s",
            "p50 latency (ms)",
            "p99 latency (ms)",
            "scheduler CPU/pod (ms)",
            "pods bound",
            "claims Bound",
            "PV not on the pod's node",
        ]
        lines = [f"### {nodes:,} nodes, {ours.pods:,} pods with a claim each", "", table(header, rows)]
        phase_rows = []
        for label, record in (("ours", ours), ("upstream", theirs)):
            phase_rows.append(
                [
                    label,
                    number(record.phases.decided_rate, 1),
                    number(record.phases.provisioned_rate, 1),
                    *(
                        f"{milliseconds(record.phases.p50.get(phase, math.nan))} / "
                        f"{milliseconds(record.phases.p99.get(phase, math.nan))}"
                        for phase in storage.PHASES
                    ),
                    number(record.cpu_share(PROVISIONER), 2),
                    number(record.cpu_share("kube-controller-manager"), 2),
                ]
            )
        for alone in (r for r in self.storage_records if r.nodes == nodes):
            phase_rows.append(
                [
                    f"{STORAGE} (#{alone.order})",
                    "",
                    number(alone.phases.provisioned_rate, 1),
                    *(
                        f"{milliseconds(alone.phases.p50.get(phase, math.nan))} / "
                        f"{milliseconds(alone.phases.p99.get(phase, math.nan))}"
                        for phase in storage.PHASES
                    ),
                    number(alone.cpu_share(PROVISIONER), 2),
                    number(alone.cpu_share("kube-controller-manager"), 2),
                ]
            )
        lines += [
            "Where the time went (the best runs above, and the storage stack alone). *given a node/s*: "
            "claims given `selected-node` per second, from the first pod created (the scheduler's pace); "
            "*Bound/s*: claims Bound per second from the first node choice (the storage stack's pace, as "
            "the scheduler fed it). Then p50 / p99 in ms of each step: *scheduled* (pod created → its "
            "claim has a node), *handed over* (→ kube-controller-manager hands the claim to the "
            "provisioner), *provisioned* (→ the PV exists), *volume bound* (→ claim Bound), *pod bound* "
            "(→ the scheduler's PreBind saw it and bound the pod). *provisioner*, *kcm*: CPUs the "
            "provisioner and kube-controller-manager kept busy on average over the run.",
            "",
            table(
                [
                    "run",
                    "given a node/s",
                    "Bound/s",
                    *(f"{phase} (ms)" for phase in storage.PHASES),
                    "provisioner (CPUs)",
                    "kcm (CPUs)",
                ],
                phase_rows,
                align="lrrrrrrrrr",
            ),
        ]
        misplaced = [text for record in (ours, theirs) for text in record.violations]
        if misplaced:
            lines += ["Misplaced volumes (first 10):", "", *(f"- {text}" for text in misplaced[:10]), ""]
        return lines

    def _all_runs(self) -> list[str]:
        rows = []
        entries: list[VolumeRunRecord | StorageRecord] = [*self.records, *self.storage_records]
        for record in sorted(entries, key=lambda entry: (entry.nodes, entry.order)):
            if isinstance(record, StorageRecord):
                rows.append(
                    [
                        f"{record.nodes:,}",
                        f"{record.order}",
                        STORAGE,
                        f"{record.bound:,}/{record.claims:,} claims",
                        number(record.rate, 1),
                        "",
                        milliseconds(record.p50),
                        milliseconds(record.p99),
                        "",
                        "",
                        "",
                        number(record.cpu_share(PROVISIONER), 2),
                        "",
                        f"{number(record.busy_before, 2)}",
                        f"{record.load_before:.2f}",
                    ]
                )
                continue
            rows.append(
                [
                    f"{record.nodes:,}",
                    f"{record.order}",
                    LABELS[record.kind],
                    f"{record.bound:,}/{record.pods:,} pods, {record.claims_bound:,} claims",
                    number(record.throughput, 1),
                    number(record.create_rate),
                    milliseconds(record.p50),
                    milliseconds(record.p99),
                    milliseconds(record.mean_attempt_seconds),
                    number(record.failed_attempts),
                    number(record.cpu_ms_per_pod("scheduler"), 2),
                    number(record.cpu_share(PROVISIONER), 2),
                    f"{len(record.violations)}",
                    f"{number(record.busy_before, 2)} ({number(record.idle_cpus, 2)})",
                    f"{record.load_before:.2f} → {record.load_after:.2f}",
                ]
            )
        header = [
            "nodes",
            "#",
            "run",
            "done",
            "pods/s (claims/s)",
            "created/s",
            "p50 (ms)",
            "p99 (ms)",
            "attempt (ms)",
            "unschedulable attempts",
            "sched CPU/pod (ms)",
            "provisioner (CPUs)",
            "misplaced",
            "busy before (idle)",
            "load",
        ]
        return [
            "### Every run",
            "",
            "In the order they ran. *created/s*: how fast the client created the pods. *attempt*: the "
            "scheduler's own mean `scheduler_scheduling_attempt_duration_seconds` (as it reports it). "
            "*unschedulable attempts*: attempts that found no node (for example a claim not yet in the "
            "scheduler's cache). *busy before*: CPUs the machine kept busy just before the run (in brackets: "
            "the idle cluster alone). *load*: the 1-minute load average at the start and end of the run.",
            "",
            table(header, rows, align="rrllrrrrrrrrrrr"),
        ]

    def _method(self) -> str:
        options = self.options
        cleanup = (
            f" (it took {min(self.cleanups):.0f}-{max(self.cleanups):.0f} s here)" if self.cleanups else ""
        )
        sizes = ", ".join(f"{size:,}" for size in options.volume_sizes)
        return f"""\
### Method

- The cluster and the scheduler processes are the throughput section's: at each size ({sizes} nodes
  here) both schedulers run in turn, {options.repeats} runs each in ABBA order, each a fresh process
  with the same flags and configuration, each waiting for its caches to sync; each run has a fresh
  namespace. The best run of each scheduler (by throughput) is shown above; every run is listed.
- A run creates {WARMUP_PODS} warm-up pods with their claims (not measured), then all the measured
  claims, waits until its watch has seen them and the machine has settled, then creates the pods
  with {options.concurrency} requests in flight. Throughput is pods over the time from the first pod
  created to the last pod bound or claim Bound, whichever is later; a pod's latency runs from its
  creation to the first watch event showing it bound. Percentiles are nearest-rank. *scheduler
  CPU/pod* is the scheduler process's CPU time over that span, per pod bound.
- *Storage alone* (before the first and after the last scheduler run at each size): the same number
  of claims, created with `selected-node` already set (round robin over the nodes) and no scheduler
  running; claims per second from the first created to the last Bound.
- After each run the pods and claims are deleted and the next run waits until the provisioner has
  deleted every PV (reclaim policy Delete) and every node's CSIStorageCapacity shows its whole pool
  again{cleanup}, so every run starts with the same free storage.
- Placement check: after each run, every measured pod's claim must be Bound to a PV whose node
  affinity (`kubernetes.io/hostname In [...]`) names the pod's node.
- Raw numbers of every run: `volumes.json` in the run's working directory; the provisioner's log is
  the cluster's `logs/storage-provisioner.log`.
"""
