"""What the chaos run sees of the cluster: when each pod was first seen bound (a watch that lives
through the API server's deaths), and the final state the invariants read.

The watch relists whenever it breaks (the API server killed, stopped, or etcd restarted, which
can compact away the resourceVersion it would resume from): a pod first seen bound in a relist
counts as bound at that moment, so a recovery is never measured shorter than it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from bench.chaos.invariants import FinalState
from bench.chaos.workload import Workload
from bench.claims import claims_path
from bench.gang import members_of
from bench.workload import pods_path
from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, ApiUnavailable
from secsched_devtools.cluster import provisioner


class FirstSeenWatch:
    """Notes the monotonic time each object of a collection is first seen as ``_saw`` wants it,
    through API server outages: it relists whenever its watch breaks."""

    def __init__(self, api: ApiClient, path: str, task_name: str) -> None:
        self.api = api
        self.path = path
        self.task_name = task_name
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.task_name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _saw(self, obj: JSON, at: float) -> None:
        raise NotImplementedError

    async def _run(self) -> None:
        while True:
            try:
                listing = await self.api.list_all(self.path)
                now = time.monotonic()
                for obj in listing["items"]:
                    self._saw(obj, now)
                version = str(listing["metadata"].get("resourceVersion", ""))
                params = {"resourceVersion": version, "allowWatchBookmarks": "true", "timeoutSeconds": "600"}
                async for event in self.api.watch(self.path, params):
                    if event.get("type") == "ERROR":
                        break  # expired or compacted: relist
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._saw(event["object"], time.monotonic())
            except (ApiUnavailable, ApiError, OSError):
                await asyncio.sleep(0.2)


class BindingWatch(FirstSeenWatch):
    """Notes the monotonic time each pod of a namespace is first seen with ``spec.nodeName``."""

    def __init__(self, api: ApiClient, namespace: str) -> None:
        super().__init__(api, pods_path(namespace), f"bindings-{namespace}")
        self.bound: dict[str, float] = {}

    def _saw(self, obj: JSON, at: float) -> None:
        name = str(obj["metadata"]["name"])
        if (obj.get("spec") or {}).get("nodeName") and name not in self.bound:
            self.bound[name] = at


async def list_retrying(api: ApiClient, path: str, timeout: float = 120.0) -> list[JSON]:
    """A full list, through a moment of an API server that is still coming back."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return list((await api.list_all(path))["items"])
        except ApiUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def final_state(api: ApiClient, namespace: str, workload: Workload) -> FinalState:
    """The cluster as the invariants read it once the run is over."""
    return FinalState(
        pods=await list_retrying(api, "/api/v1/pods"),
        nodes=await list_retrying(api, "/api/v1/nodes"),
        claims=await list_retrying(api, claims_path(namespace)),
        volumes=await list_retrying(api, provisioner.PVS),
        events=await list_retrying(api, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"),
        namespace=namespace,
        expected=workload.names,
        fillers=workload.filler_names,
        gangs=members_of(workload.pods),
    )


async def create_retrying(api: ApiClient, path: str, manifest: JSON) -> None:
    """Create one object through API server outages, as a controller would: an AlreadyExists after
    a lost answer means the first try went through."""
    while True:
        try:
            await api.create(path, manifest)
            return
        except ApiError as error:
            if error.status == 409:
                return
            if error.status < 500 and error.status != 429:
                raise
        except ApiUnavailable:
            pass
        await asyncio.sleep(0.5)
