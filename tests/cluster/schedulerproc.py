"""Helpers for the scheduler's cluster tests: run it (as a real process), make pods, wait for bindings."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import poll_until, wait_for
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster
from secsched_devtools.cluster.schedulers import OURS, SchedulerRun, start_scheduler

SECONDARY_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 500
  burst: 1000
profiles:
  - schedulerName: secondary-scheduler
"""


@contextmanager
def running_scheduler(
    kubeconfig: Path | str,
    directory: Path,
    config: str = SECONDARY_CONFIG,
    name: str = "scheduler",
    extra_args: tuple[str, ...] = (),
) -> Iterator[SchedulerRun]:
    """`secsched scheduler` with this config (and flags), ready (caches synced); SIGTERM-ed afterwards."""
    run = start_scheduler(OURS, config, kubeconfig, directory, name=name, extra_args=extra_args)
    try:
        yield run
    finally:
        run.stop()


@contextmanager
def fixed_load_cluster(label: str, node_loads: dict[str, dict[str, float]]) -> Iterator[LocalCluster]:
    """A cluster of its own whose nodes carry `node_loads` from the start, for the load-aware tests.

    Only our scheduler, one zone, a 1-s scrape; no noise unless asked and pods add no load, so the
    means the plugins read are exactly the loads given here.
    """
    options = ClusterOptions(
        name=f"pytest-{label}-{os.getpid()}",
        nodes=len(node_loads),
        zones=1,
        default_scheduler=False,
        scrape_interval="1s",
        base_load={
            "default": {"cpu": 0.0, "memory": 0.0, "noise": 0.0},
            "nodes": node_loads,
            "podFactor": 0.0,
        },
    )
    with LocalCluster(options) as local:
        yield local


def pod_manifest(
    name: str, scheduler: str = "secondary-scheduler", cpu: str = "100m", memory: str = "128Mi", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name.rsplit("-", 1)[0]}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        },
    }


async def create_pods(
    api: ApiClient, namespace: str, pods: list[dict[str, Any]], concurrency: int = 32
) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def create(pod: dict[str, Any]) -> None:
        async with gate:
            await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)

    await asyncio.gather(*(create(pod) for pod in pods))


async def place(api: ApiClient, namespace: str, pod: dict[str, Any]) -> str:
    """Create one pod and return the node it was bound to."""
    await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)
    path = f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}"

    async def node() -> str | None:
        return (await api.get(path))["spec"].get("nodeName")

    return await wait_for(node, f"pod {pod['metadata']['name']} to be bound", timeout=60)


async def wait_all_bound(
    api: ApiClient, namespace: str, count: int, timeout: float = 120
) -> list[dict[str, Any]]:
    async def bound() -> list[dict[str, Any]] | None:
        pods = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
        done = [pod for pod in pods if pod["spec"].get("nodeName")]
        return pods if len(done) >= count else None

    return await wait_for(bound, f"{count} pods in {namespace} to be bound", timeout=timeout, interval=0.5)


async def metric_reaches(
    run: SchedulerRun, name: str, labels: str = "", at_least: float = 1, timeout: float = 30
) -> float:
    """The metric's value once it is at least ``at_least``.

    A scheduler counts a pod's attempt after its binding is answered, so a pod can be seen
    bound a moment before it is counted: read a count only once it has caught up.
    """

    async def read() -> float:
        return await asyncio.to_thread(run.metric, name, labels)

    return await poll_until(
        read,
        lambda value: value >= at_least,
        lambda value: f"{name}{{{labels}}} still {value:g} after {timeout:.0f}s, not {at_least:g}",
        timeout,
        interval=0.1,
    )


async def scheduled_events(api: ApiClient, namespace: str) -> list[dict[str, Any]]:
    events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
    return [event for event in events if event.get("reason") == "Scheduled"]
