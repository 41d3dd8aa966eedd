"""Helpers for the scheduler's cluster tests: run it (as a real process), make pods, wait for bindings."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import poll_until, wait_for
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
