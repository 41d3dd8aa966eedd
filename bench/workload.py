"""Pods to schedule, created as fast as the client can, and a watch that times each one."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence

from bench.objects import ObjectWatch, create_objects, delete_each
from bench.stats import PodClock
from secondary_scheduler.kube.client import JSON, ApiClient

CPU_REQUESTS = ("100m", "100m", "200m", "250m", "500m")
MEMORY_REQUESTS = ("128Mi", "128Mi", "256Mi", "512Mi")
NO_GRACE = {"gracePeriodSeconds": 0}
"""Benchmark pods go at once: nothing runs in them (KWOK)."""


def pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def pod_manifests(prefix: str, count: int, scheduler_name: str, seed: int = 0) -> list[JSON]:
    """``count`` pause pods with modest, varied requests that all fit (100m-500m, 128-512Mi).

    The same seed gives the same requests, so every scheduler gets the same workload.
    """
    rng = random.Random(seed)
    manifests = []
    for index in range(count):
        manifests.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{prefix}-{index:05d}", "labels": {"app": "bench", "run": prefix}},
                "spec": {
                    "schedulerName": scheduler_name,
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {
                                "requests": {
                                    "cpu": rng.choice(CPU_REQUESTS),
                                    "memory": rng.choice(MEMORY_REQUESTS),
                                }
                            },
                        }
                    ],
                },
            }
        )
    return manifests


async def delete_all_pods(
    api: ApiClient,
    namespace: str,
    concurrency: int = 32,
    timeout: float = 600.0,
    *,
    selector: str | None = None,
) -> None:
    """Delete every pod in the namespace (those ``selector`` selects, if given; no grace period) and
    wait until none is left.

    One DELETE per pod rather than one deletecollection: a loaded API server can take
    longer than its request timeout (60s) to delete thousands of pods in one call. Not
    ``kube.wait.poll_until``: each round deletes what the last list still showed.
    """
    path = pods_path(namespace)
    query = None if selector is None else {"labelSelector": selector}
    which = "" if selector is None else f" ({selector})"
    deadline = time.monotonic() + timeout
    while True:
        names = [item["metadata"]["name"] for item in (await api.list_all(path, query))["items"]]
        if not names:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(names)} pods{which} in {namespace} still there after {timeout:.0f}s")
        await delete_each(api, path, names, concurrency, NO_GRACE)


class PodWatch(ObjectWatch):
    """Feeds a PodClock from a watch on one namespace's pods, from its current resourceVersion on."""

    def __init__(self, api: ApiClient, namespace: str, clock: PodClock) -> None:
        super().__init__(api, pods_path(namespace), self._saw, asyncio.Event())
        self.namespace = namespace
        self.clock = clock

    def _saw(self, pod: JSON, at: float) -> None:
        name = str((pod.get("metadata") or {}).get("name"))
        self.clock.saw(name, at, (pod.get("spec") or {}).get("nodeName"))


async def create_pods(
    api: ApiClient,
    namespace: str,
    manifests: Sequence[JSON],
    clock: PodClock,
    concurrency: int,
    on_created: Callable[[], None] | None = None,
) -> None:
    """Create the pods in order with at most ``concurrency`` requests in flight."""

    def created(name: str, at: float) -> None:
        clock.create_returned(name, at)
        if on_created is not None:
            on_created()

    await create_objects(api, pods_path(namespace), manifests, concurrency, created)
