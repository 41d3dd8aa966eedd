"""The order of a soak: a cluster, our scheduler on it, the churn and the samples, the verdict.

`soak_on` runs on a cluster someone else started (the smoke test's); `soak` starts one of its own
for the run and stops it after.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import yaml

from bench.soak.analysis import MIB, Analysis, analyse
from bench.soak.churn import Churned, MetricsFlap, NodeChurn, PodChurn
from bench.soak.options import SoakOptions
from bench.soak.probe import Probe, Sample
from bench.soak.workload import SCHEDULER_NAME
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster
from secsched_devtools.cluster.progress import format_elapsed
from secsched_devtools.cluster.schedulers import OURS, SchedulerRun, start_scheduler
from secsched_devtools.repo import example_config

BASE_LOAD = {"default": {"cpu": 0.3, "memory": 0.3, "noise": 0.05}, "podFactor": 1.0}
NODE_LEASE_SECONDS = 600
"""KWOK renews each Lease every quarter of this: a write per node every 2.5 minutes rather than
every 10 s keeps the API server's work on the two shared cores for the scheduler's traffic."""


class SchedulerDied(RuntimeError):
    """Our scheduler exited during the soak; the message holds its log's tail."""


@dataclass
class SoakResult:
    samples: list[Sample]
    churned: Churned
    analysis: Analysis
    missed: list[str]
    """Samples not taken, each as the time and why (a page that timed out on a busy machine)."""


def scheduler_config(prometheus_url: str) -> str:
    """deploy/06's configuration (TargetLoadPacking reading Prometheus) as the soak runs it."""
    document = yaml.safe_load(example_config().replace("${PROM_URL}", prometheus_url))
    [profile] = document["profiles"]
    if profile["schedulerName"] != SCHEDULER_NAME:
        raise ValueError(
            f"deploy/06's profile is {profile['schedulerName']!r}, the soak's pods name {SCHEDULER_NAME!r}"
        )
    document["clientConnection"] = {"qps": 200, "burst": 400}
    return yaml.safe_dump(document, sort_keys=False)


def cluster_options(options: SoakOptions) -> ClusterOptions:
    return ClusterOptions(
        name=options.cluster_name,
        nodes=options.nodes,
        zones=3,
        default_scheduler=False,
        topology_exporter=False,
        base_load=BASE_LOAD,
        node_lease_seconds=NODE_LEASE_SECONDS,
    )


def soak(options: SoakOptions, progress: Callable[[str], None]) -> SoakResult:
    """Start a cluster of the soak's own, soak on it, stop it."""
    with LocalCluster(cluster_options(options)) as cluster:
        return soak_on(cluster, options, progress)


def soak_on(cluster: LocalCluster, options: SoakOptions, progress: Callable[[str], None]) -> SoakResult:
    """Our scheduler on ``cluster`` for ``options.duration`` seconds of churn, sampled."""
    run = start_scheduler(
        OURS,
        scheduler_config(cluster.prometheus_url),
        cluster.kubeconfig,
        options.work_dir,
        name="ours-soak",
        extra_args=("--profiling",),
    )
    with run:
        progress(
            f"ours runs as pid {run.process.pid} (log {run.log}); "
            f"churning for {format_elapsed(options.duration)}"
        )
        samples, missed, churned = asyncio.run(_churn_and_sample(cluster, run, options, progress))
    return SoakResult(samples, churned, analyse(samples, options.duration, options.bounds), missed)


async def _churn_and_sample(
    cluster: LocalCluster, run: SchedulerRun, options: SoakOptions, progress: Callable[[str], None]
) -> tuple[list[Sample], list[str], Churned]:
    churned = Churned()
    namespace = f"soak-{uuid.uuid4().hex[:8]}"
    admin = (str(cluster.pki.client_cert("admin")), str(cluster.pki.client_key("admin")))
    probe = Probe(run.process.pid, run.port, cluster.ports["apiserver"], admin)
    try:
        async with cluster.api() as api:
            manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            await api.create("/api/v1/namespaces", manifest)
            started = time.monotonic()
            until = started + options.duration
            pods = PodChurn(api, namespace, options, churned)
            nodes = NodeChurn(cluster, api, options, churned)
            churn = [
                asyncio.create_task(pods.run(until), name="soak-pods"),
                asyncio.create_task(nodes.run(until), name="soak-nodes"),
                asyncio.create_task(MetricsFlap(cluster, options, churned).run(until), name="soak-metrics"),
            ]
            try:
                samples, missed = await _sample(probe, run, started, until, options, churned, pods, progress)
                await asyncio.gather(*churn)
            finally:
                for task in churn:
                    task.cancel()
                await asyncio.gather(*churn, return_exceptions=True)
                # The pods still alive go with it (a cluster the caller keeps is left as it was).
                await api.delete(f"/api/v1/namespaces/{namespace}")
    finally:
        await probe.close()
    return samples, missed, churned


async def _sample(
    probe: Probe,
    run: SchedulerRun,
    started: float,
    until: float,
    options: SoakOptions,
    churned: Churned,
    pods: PodChurn,
    progress: Callable[[str], None],
) -> tuple[list[Sample], list[str]]:
    """A sample every ``sample_every`` seconds from the churn's start to its end (both included),
    and the samples missed: a page that timed out is reported, and the next sample is taken."""
    samples: list[Sample] = []
    missed: list[str] = []
    next_at = started
    while True:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        if run.process.poll() is not None:
            raise SchedulerDied(f"ours exited with {run.process.returncode} during the soak:\n{run.tail()}")
        try:
            sample = await probe.sample(time.monotonic() - started)
        except httpx.TimeoutException as error:
            missed.append(f"{format_elapsed(time.monotonic() - started)}: {type(error).__name__} {error}")
            progress(f"sample missed: {missed[-1]}")
        else:
            samples.append(sample)
            _report(sample, churned, pods, progress)
        if next_at >= until:
            return samples, missed
        next_at = min(next_at + options.sample_every, until)


def _report(sample: Sample, churned: Churned, pods: PodChurn, progress: Callable[[str], None]) -> None:
    """The progress line of one sample."""
    progress(
        f"{format_elapsed(sample.seconds)}: RSS {sample.rss_bytes / MIB:.1f} MiB, {sample.tasks} tasks "
        f"({sample.watch_tasks} watch loops), {sample.api_connections} API conns, {sample.open_fds} fds; "
        f"pods live {pods.live}, created {churned.pods_created:,}, scheduled {sample.scheduled:,.0f}, "
        f"pending {sample.pending_active + sample.pending_backoff:.0f}; nodes +{churned.nodes_added} "
        f"-{churned.nodes_removed}; flaps {sum(churned.flaps.values())}; "
        f"errors {sum(churned.errors.values())}"
    )
