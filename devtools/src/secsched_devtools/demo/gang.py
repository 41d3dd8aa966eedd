"""The HPC scene: two MPI jobs arrive together and each needs most of the cluster.

An MPI job starts only when its launcher and every worker run. Both jobs' pods are created
interleaved (as two MPIJobs submitted at once are), each job sized to about 60% of the
cluster's worker slots: one job fits, both do not. A scheduler that places pods one by one
(kube-scheduler's default profile) gives each job part of what it needs, and neither can
start while their pods hold the nodes: a deadlock only a human ends. Gang scheduling
(Coscheduling, a PodGroup per job with minMember = all its pods) binds one job whole and
leaves the other pending without holding anything, then binds the second once the first is
done.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.kube.quantity import milli_value
from secsched_devtools.demo.workload import SECONDARY_SCHEDULER

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
WORKER_MILLI_CPU = 4000
LAUNCHER_MILLI_CPU = 250
JOB_SHARE = 0.6
"""Each job asks for this share of the cluster's worker slots: one fits, two do not."""
SETTLE_SECONDS = 8.0
"""No new binding for this long (after the schedulers had time to try everything): the state holds."""
MIN_WATCH_SECONDS = 20.0
MAX_WATCH_SECONDS = 90.0
OTHER_JOB_WATCH_SECONDS = 45.0
"""How long the scene waits for the second job once the first is deleted. Upstream's Coscheduling
can take kube-scheduler's 5-minute unschedulable flush here: when the first job's room frees pod
by pod, the second gang's early members fit, a later one does not, and the group is rejected
with Coscheduling as the rejector, whose events (PodGroup and Pod adds) do not include deletions."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Job:
    name: str
    workers: int

    @property
    def members(self) -> int:
        """Launcher plus workers: all must run for the job to start."""
        return self.workers + 1

    @property
    def milli_cpu(self) -> int:
        return self.workers * WORKER_MILLI_CPU + LAUNCHER_MILLI_CPU


@dataclass
class GangResult:
    label: str
    jobs: list[Job]
    slots: int
    """Workers the cluster can hold at once (4-core slots over every node)."""
    bound: dict[str, int] = field(default_factory=dict)
    """Job -> pods bound once the state held."""
    settled_after: float = 0.0
    finished: str = ""
    """The job deleted to let the other run (the complete one, else the first)."""
    other_complete_after: float | None = None
    """Seconds from that deletion until every pod of the other job was bound (None: not within
    OTHER_JOB_WATCH_SECONDS)."""
    error: str = ""

    def startable(self) -> int:
        """Jobs whose every pod is bound: the ones that can start."""
        return sum(self.bound.get(job.name, 0) == job.members for job in self.jobs)

    def idle_cores(self) -> float:
        """Cores held by pods of jobs that cannot start (bound, but waiting for their peers)."""
        held = 0
        for job in self.jobs:
            bound = self.bound.get(job.name, 0)
            if 0 < bound < job.members:
                held += min(bound, job.workers) * WORKER_MILLI_CPU
        return held / 1000

    @property
    def deadlocked(self) -> bool:
        return self.startable() == 0 and any(self.bound.values())


def plan_jobs(allocatable_milli_cpu: list[int]) -> tuple[int, list[Job]]:
    """(worker slots, two jobs of ~60% of them each) for nodes with this allocatable CPU."""
    slots = sum(milli // WORKER_MILLI_CPU for milli in allocatable_milli_cpu)
    workers = max(2, math.ceil(slots * JOB_SHARE))
    return slots, [Job("mpi-a", workers), Job("mpi-b", workers)]


def pod_group(job: Job, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": job.name, "namespace": namespace},
        "spec": {"minMember": job.members, "scheduleTimeoutSeconds": 30},
    }


def job_pod(job: Job, role: str, index: int | None = None) -> dict[str, Any]:
    """A launcher or worker pod of an MPIJob, joined to the job's PodGroup by label."""
    name = f"{job.name}-{role}" if index is None else f"{job.name}-{role}-{index}"
    cpu = WORKER_MILLI_CPU if role == "worker" else LAUNCHER_MILLI_CPU
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {POD_GROUP_LABEL: job.name, "app": "mpi", "training.kubeflow.org/job-role": role},
        },
        "spec": {
            "schedulerName": SECONDARY_SCHEDULER,
            "containers": [
                {
                    "name": role,
                    "image": "mpioperator/mpi-pi:openmpi",
                    "resources": {"requests": {"cpu": f"{cpu}m", "memory": "1Gi"}},
                }
            ],
        },
    }


def interleaved_pods(jobs: list[Job]) -> list[dict[str, Any]]:
    """Both jobs' workers alternately, then their launchers: as two jobs submitted at once arrive."""
    pods: list[dict[str, Any]] = []
    for index in range(max(job.workers for job in jobs)):
        pods.extend(job_pod(job, "worker", index) for job in jobs if index < job.workers)
    pods.extend(job_pod(job, "launcher") for job in jobs)
    return pods


async def _bound_per_job(api: ApiClient, namespace: str) -> dict[str, int]:
    pods = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
    bound: dict[str, int] = {}
    for pod in pods:
        if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            group = pod["metadata"].get("labels", {}).get(POD_GROUP_LABEL, "")
            bound[group] = bound.get(group, 0) + 1
    return bound


async def _settle(api: ApiClient, namespace: str, jobs: list[Job]) -> tuple[dict[str, int], float]:
    """Bound pods per job once nothing changed for SETTLE_SECONDS (or all are bound)."""
    started = time.monotonic()
    last: dict[str, int] = {}
    changed = started
    while True:
        bound = await _bound_per_job(api, namespace)
        now = time.monotonic()
        if bound != last:
            last, changed = bound, now
        if all(bound.get(job.name, 0) == job.members for job in jobs):
            return bound, now - started
        quiet = now - changed >= SETTLE_SECONDS and now - started >= MIN_WATCH_SECONDS
        if quiet or now - started >= MAX_WATCH_SECONDS:
            return bound, now - started
        await asyncio.sleep(0.5)


async def run_gang_scene(
    api: ApiClient, namespace: str, progress: Progress, *, label: str, with_pod_groups: bool = True
) -> GangResult:
    """Submit both jobs, record what each got, then delete one job and time the other's start."""
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    slots, jobs = plan_jobs([milli_value(node["status"]["allocatable"]["cpu"]) for node in nodes])
    result = GangResult(label, jobs, slots)
    await ensure_namespace(api, namespace)
    if with_pod_groups:
        for job in jobs:
            await api.create(
                f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups",
                pod_group(job, namespace),
            )
    pods = interleaved_pods(jobs)
    for pod in pods:
        await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)
    progress(f"{label}: {len(pods)} pods of {len(jobs)} MPI jobs submitted; waiting until placement holds")
    result.bound, result.settled_after = await _settle(api, namespace, jobs)
    complete = [job for job in jobs if result.bound.get(job.name, 0) == job.members]
    finished = complete[0] if complete else jobs[0]
    other = next(job for job in jobs if job is not finished)
    result.finished = finished.name
    progress(f"{label}: {finished.name} deleted; waiting for {other.name}")
    deleted = time.monotonic()
    await api.delete(
        f"/api/v1/namespaces/{namespace}/pods",
        params={"labelSelector": f"{POD_GROUP_LABEL}={finished.name}", "gracePeriodSeconds": "0"},
    )
    while time.monotonic() - deleted < OTHER_JOB_WATCH_SECONDS:
        if (await _bound_per_job(api, namespace)).get(other.name, 0) == other.members:
            result.other_complete_after = time.monotonic() - deleted
            break
        await asyncio.sleep(0.5)
    return result
