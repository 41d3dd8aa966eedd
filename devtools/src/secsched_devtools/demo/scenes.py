"""The demo's HPC and telco scenes: what users bring a second scheduler for besides load.

Both run on one small cluster of mixed nodes, once per scheduler: upstream kube-scheduler's
default profile (what a cluster has without a second scheduler), upstream scheduler-plugins
with the scene's plugin, and ours with the same profile. Each run gets its own namespace,
removed (with its pods) before the next scheduler starts.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rich.table import Table

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster
from secsched_devtools.cluster.progress import console, step
from secsched_devtools.cluster.schedulers import (
    COSCHEDULING_PROFILE,
    OURS,
    UPSTREAM,
    scheduler_config,
    start_scheduler,
)
from secsched_devtools.demo.gang import (
    OTHER_JOB_WATCH_SECONDS,
    WORKER_MILLI_CPU,
    GangResult,
    run_gang_scene,
)
from secsched_devtools.demo.numa import CNF_CORES, NRT_PROFILE, NumaResult, run_numa_scene
from secsched_devtools.demo.workload import SECONDARY_SCHEDULER

SCENE_CLUSTER = "demo-scenes"
SCENE_NODES = 6
T = TypeVar("T")


@dataclass(frozen=True)
class Contender:
    label: str
    kind: str
    """OURS or UPSTREAM."""
    profile: str
    """Profile lines for the scene's plugin; "" for the default profile."""

    @property
    def ours(self) -> bool:
        return self.kind == OURS


def contenders(plugin: str, profile: str) -> list[Contender]:
    return [
        Contender("upstream kube-scheduler, default profile", UPSTREAM, ""),
        Contender(f"upstream scheduler-plugins, {plugin}", UPSTREAM, profile),
        Contender(f"ours: secsched + {plugin}", OURS, profile),
    ]


async def _delete_namespace(api: ApiClient, namespace: str) -> None:
    """Delete the run's namespace and wait until it (and every pod in it) is gone."""
    try:
        await api.delete(f"/api/v1/namespaces/{namespace}", params={"gracePeriodSeconds": "0"})
    except ApiError as error:
        if not error.not_found:
            raise

    async def gone() -> bool:
        try:
            await api.get(f"/api/v1/namespaces/{namespace}")
        except ApiError as error:
            if error.not_found:
                return True
            raise
        return False

    await wait_for(gone, f"namespace {namespace} to be deleted", timeout=120)


SceneRun = Callable[[ApiClient, str, Callable[[str], None]], Awaitable[T]]
"""One contender's part of a scene: (api, namespace, progress) -> its result."""


async def _in_namespace(
    cluster: LocalCluster, namespace: str, run: SceneRun[T], progress: Callable[[str], None]
) -> T:
    async with cluster.api() as api:
        try:
            return await run(api, namespace, progress)
        finally:
            await _delete_namespace(api, namespace)


def _run_each(
    cluster: LocalCluster, output: Path, scene: str, runners: list[tuple[Contender, SceneRun[T]]]
) -> list[T]:
    """Start each contender's scheduler, run its part of the scene in a namespace of its own, stop it."""
    results: list[T] = []
    for index, (contender, run) in enumerate(runners, start=1):
        config = scheduler_config(SECONDARY_SCHEDULER, profile_extra=contender.profile)
        directory = output / f"{scene}-{index}"
        with step(f"{scene}: {contender.label}") as current:
            scheduler = start_scheduler(contender.kind, config, cluster.kubeconfig, directory)
            try:
                results.append(asyncio.run(_in_namespace(cluster, f"{scene}-{index}", run, current.update)))
            finally:
                scheduler.stop()
    return results


def run_gang(cluster: LocalCluster, output: Path) -> list[GangResult]:
    runners: list[tuple[Contender, SceneRun[GangResult]]] = [
        (contender, functools.partial(run_gang_scene, label=contender.label))
        for contender in contenders("Coscheduling", COSCHEDULING_PROFILE)
    ]
    return _run_each(cluster, output, "hpc", runners)


def print_gang(results: list[GangResult]) -> None:
    first = results[0]
    job = first.jobs[0]
    console.print(
        f"\n[bold]HPC: two MPI jobs at once[/bold]: each a launcher + {job.workers} workers of "
        f"{WORKER_MILLI_CPU // 1000} cores ({job.members} pods, PodGroup minMember {job.members}); "
        f"the cluster holds {first.slots} workers, so one job fits and two do not",
        soft_wrap=True,
    )
    table = Table()
    table.add_column("")
    for result in results:
        table.add_column(result.label, justify="right")
    rows: dict[str, list[str]] = {name: [] for name in (*(j.name for j in first.jobs), "jobs that can start")}
    rows["cores held by jobs that cannot start"] = []
    rows["the other job, once one is deleted"] = []
    for result in results:
        for each in result.jobs:
            bound = result.bound.get(each.name, 0)
            style = "green" if bound in (0, each.members) else "red"
            rows[each.name].append(f"[{style}]{bound}/{each.members} bound[/{style}]")
        startable = result.startable()
        style = "red" if result.deadlocked else "green"
        label = f"{startable} of {len(result.jobs)}" + (" (deadlock)" if result.deadlocked else "")
        rows["jobs that can start"].append(f"[{style}]{label}[/{style}]")
        idle = result.idle_cores()
        rows["cores held by jobs that cannot start"].append(f"[red]{idle:.0f}[/red]" if idle else "0")
        after = result.other_complete_after
        rows["the other job, once one is deleted"].append(
            f"all bound after {after:.1f}s"
            if after is not None
            else f"[yellow]not all bound within {OTHER_JOB_WATCH_SECONDS:.0f}s[/yellow]"
        )
    for name, cells in rows.items():
        table.add_row(name, *cells)
    console.print(table)


def gang_problems(result: GangResult) -> list[str]:
    """What is wrong with our run of the HPC scene (upstream's runs are shown, never judged)."""
    if result.startable() != 1 or result.idle_cores():
        return [f"bound {result.bound} of two gangs (expected one whole gang, nothing of the other)"]
    return []


def run_numa(cluster: LocalCluster, output: Path) -> list[NumaResult]:
    runners: list[tuple[Contender, SceneRun[NumaResult]]] = [
        (contender, functools.partial(run_numa_scene, label=contender.label))
        for contender in contenders("NodeResourceTopologyMatch", NRT_PROFILE)
    ]
    return _run_each(cluster, output, "telco", runners)


def print_numa(results: list[NumaResult]) -> None:
    first = results[0]
    free = first.zone_free or {}
    console.print(
        f"\n[bold]Telco: a {CNF_CORES}-core Guaranteed CNF under single-numa-node[/bold]: free cores per "
        f"NUMA zone when it arrives: {first.split_node} {_cores(free.get(first.split_node))}, "
        f"{first.packed_node} {_cores(free.get(first.packed_node))}",
        soft_wrap=True,
    )
    for result in results:
        style = "green" if result.node and result.admitted else "red"
        console.print(f"  {result.label}: [{style}]{result.verdict()}[/{style}]", soft_wrap=True)


def _cores(zones: list[int] | None) -> str:
    return " + ".join(f"{milli / 1000:.2f}" for milli in zones or []) or "?"


def numa_problems(result: NumaResult) -> list[str]:
    """What is wrong with our run of the telco scene."""
    if not result.node or not result.admitted:
        return [f"placed the NUMA-pinned CNF badly: {result.verdict()}"]
    return []


def run_scenes(output: Path, keep: bool = False) -> list[str]:
    """Both scenes on one cluster; prints their tables; returns what went wrong with ours."""
    cluster = LocalCluster(
        ClusterOptions(name=SCENE_CLUSTER, nodes=SCENE_NODES, shape=None, zones=3, prometheus=False)
    ).up()
    try:
        gang = run_gang(cluster, output)
        numa = run_numa(cluster, output)
    finally:
        if keep:
            console.print(
                f"[yellow]--keep:[/yellow] cluster {SCENE_CLUSTER!r} left running "
                f"(KUBECONFIG={cluster.kubeconfig}); "
                f"stop it with `secsched cluster down --name {SCENE_CLUSTER}`"
            )
        else:
            cluster.down()
    print_gang(gang)
    print_numa(numa)
    return [*gang_problems(gang[-1]), *numa_problems(numa[-1])]
