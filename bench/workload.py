"""Pods to schedule, created as fast as the client can, and a watch that times each one."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Sequence

from bench.stats import PodClock
from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, ApiUnavailable

CPU_REQUESTS = ("100m", "100m", "200m", "250m", "500m")
MEMORY_REQUESTS = ("128Mi", "128Mi", "256Mi", "512Mi")


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
    api: ApiClient, namespace: str, concurrency: int = 32, timeout: float = 600.0
) -> None:
    """Delete every pod in the namespace (no grace period) and wait until none is left.

    One DELETE per pod rather than one deletecollection: a loaded API server can take
    longer than its request timeout (60s) to delete thousands of pods in one call.
    """
    path = pods_path(namespace)
    deadline = time.monotonic() + timeout
    while True:
        names = [item["metadata"]["name"] for item in (await api.list_all(path))["items"]]
        if not names:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(names)} pods in {namespace} still there after {timeout:.0f}s")
        await _delete_each(api, path, names, concurrency)


async def _delete_each(api: ApiClient, path: str, names: list[str], concurrency: int) -> None:
    pending = iter(names)

    async def worker() -> None:
        for name in pending:
            try:
                await api.delete(f"{path}/{name}", {"gracePeriodSeconds": 0})
            except ApiError as error:
                if not error.not_found:
                    raise

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))


class PodWatch:
    """Feeds a PodClock from a watch on one namespace, from a given resourceVersion on."""

    def __init__(self, api: ApiClient, namespace: str, clock: PodClock) -> None:
        self.api = api
        self.namespace = namespace
        self.clock = clock
        self.events = 0
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listing = await self.api.get(pods_path(self.namespace), {"limit": 1})
        version = str(listing.get("metadata", {}).get("resourceVersion", ""))
        self._task = asyncio.create_task(self._run(version), name=f"watch-{self.namespace}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, version: str) -> None:
        path = pods_path(self.namespace)
        while True:
            params = {"resourceVersion": version, "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
            try:
                async for event in self.api.watch(path, params):
                    now = time.monotonic()
                    obj = event.get("object") or {}
                    metadata = obj.get("metadata") or {}
                    version = str(metadata.get("resourceVersion", version))
                    kind = event.get("type")
                    if kind == "ERROR":
                        raise RuntimeError(f"the benchmark's pod watch failed: {obj.get('message')}")
                    if kind in ("ADDED", "MODIFIED"):
                        self.events += 1
                        self.clock.saw(
                            str(metadata.get("name")), now, (obj.get("spec") or {}).get("nodeName")
                        )
                        self.changed.set()
            except ApiUnavailable:
                await asyncio.sleep(0.2)  # resume from the last version seen


async def create_pods(
    api: ApiClient,
    namespace: str,
    manifests: Sequence[JSON],
    clock: PodClock,
    concurrency: int,
    on_created: Callable[[], None] | None = None,
) -> None:
    """Create the pods in order with at most ``concurrency`` requests in flight."""
    path = pods_path(namespace)
    pending = iter(manifests)

    async def worker() -> None:
        for manifest in pending:
            await api.create(path, manifest)
            clock.create_returned(manifest["metadata"]["name"], time.monotonic())
            if on_created is not None:
                on_created()

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
