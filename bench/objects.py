"""Objects through the API as a benchmark needs them: created and deleted with bounded
concurrency, and a watch that notes when each change was seen (pods, claims, volumes alike)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, ApiUnavailable


class ObjectWatch:
    """Calls ``seen(object, monotonic time)`` for every ADDED or MODIFIED event of a collection,
    from the collection's current resourceVersion on, and sets ``changed``."""

    def __init__(
        self, api: ApiClient, path: str, seen: Callable[[JSON, float], None], changed: asyncio.Event
    ) -> None:
        self.api = api
        self.path = path
        self.seen = seen
        self.changed = changed
        self.events = 0
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
                        self.events += 1
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
    """Create the objects in order with at most ``concurrency`` requests in flight; ``on_created``
    gets each one's name and the monotonic time its create call returned."""
    pending = iter(manifests)

    async def worker() -> None:
        for manifest in pending:
            await api.create(path, manifest)
            if on_created is not None:
                on_created(manifest["metadata"]["name"], time.monotonic())

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))


async def delete_each(
    api: ApiClient,
    path: str,
    names: Sequence[str],
    concurrency: int,
    params: Mapping[str, Any] | None = None,
) -> None:
    """Delete the named objects with at most ``concurrency`` requests in flight (one already gone
    is fine); ``params`` go with each DELETE (``gracePeriodSeconds``, say)."""
    pending = iter(names)

    async def worker() -> None:
        for name in pending:
            try:
                await api.delete(f"{path}/{name}", params)
            except ApiError as error:
                if not error.not_found:
                    raise

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
