"""The loop the local cluster's own controllers share (storage provisioner, topology exporter,
DRA driver): reflectors fill stores that wake one reconcile pass; a pass runs after every change
and every ``resync_seconds`` in any case, and waits with backoff while the API server is away.
A subclass says what one pass does and what it logs; a publisher's pass can hand its desired
objects to ``write_objects``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.reflector import Reflector
from secondary_scheduler.kube.store import ObjectStore

log = logging.getLogger(__name__)

Outcome = TypeVar("Outcome")
"""What one pass reports (what it changed), for ``reconciled`` to log."""


class WatchLoop(ABC, Generic[Outcome]):
    """Reflectors feeding stores, and one reconcile pass woken by any of them."""

    settle_seconds = 0.0
    """A pause after each pass, so a burst of watch events lands before the next one."""

    def __init__(self, api: ApiClient, resync_seconds: float) -> None:
        self.api = api
        self.resync_seconds = resync_seconds
        self.wake = asyncio.Event()
        self.reflectors: list[Reflector] = []

    def watched(self, path: str, name: str, params: dict[str, str] | None = None) -> ObjectStore:
        """A store of the objects at `path`, kept by a reflector of this loop; changes wake it."""
        store = ObjectStore(self.wake.set)
        self.reflectors.append(Reflector(self.api, path, store, params=params, name=name))
        return store

    async def write_objects(
        self,
        collection: str,
        current: ObjectStore,
        wanted: Mapping[str, JSON],
        same: Callable[[JSON, JSON], bool],
        replacement: Callable[[JSON, JSON], JSON] = lambda existing, desired: desired,
    ) -> tuple[list[str], list[str]]:
        """Make the objects of ``collection`` that ``current`` holds be ``wanted`` (by name): create
        the missing, replace those not ``same(existing, desired)`` with ``replacement(existing,
        desired)`` at the existing resourceVersion, delete the rest. Returns the names written and
        those deleted; a refused write is logged and tried again on the next pass."""
        existing_by_name = {str(obj["metadata"]["name"]): obj for obj in current.objects.values()}
        written: list[str] = []
        for name, desired in sorted(wanted.items()):
            existing = existing_by_name.get(name)
            if existing is not None and same(existing, desired):
                continue
            try:
                if existing is None:
                    await self.api.create(collection, desired)
                else:
                    body = replacement(existing, desired)
                    metadata = {
                        **body["metadata"],
                        "resourceVersion": existing["metadata"]["resourceVersion"],
                    }
                    await self.api.replace(f"{collection}/{name}", {**body, "metadata": metadata})
                written.append(name)
            except ApiError as error:
                log.info("%s: write refused (%s); retrying on the next pass", name, error)
        deleted: list[str] = []
        for name in sorted(set(existing_by_name) - set(wanted)):
            with contextlib.suppress(ApiError):
                await self.api.delete(f"{collection}/{name}")
                deleted.append(name)
        return written, deleted

    async def run(self, stop: asyncio.Event) -> None:
        """Watch and reconcile until `stop` is set; whatever is in flight then is abandoned."""
        tasks = [asyncio.create_task(reflector.run()) for reflector in self.reflectors]
        worker = asyncio.create_task(self._work())
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({worker, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if worker.done():
                worker.result()  # a bug surfaces here rather than hanging silently
        finally:
            for task in (*tasks, worker, stopping):
                task.cancel()
            await asyncio.gather(*tasks, worker, stopping, return_exceptions=True)

    async def _work(self) -> None:
        await asyncio.gather(*(reflector.synced.wait() for reflector in self.reflectors))
        await self.started()
        backoff = 0.5
        while True:
            self.wake.clear()
            try:
                outcome = await self.reconcile()
                backoff = 0.5
            except ApiUnavailable as error:
                log.warning("API server unavailable (%s); retrying in %.1fs", error, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            self.reconciled(outcome)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.resync_seconds)
            if self.settle_seconds:
                await asyncio.sleep(self.settle_seconds)

    @abstractmethod
    async def started(self) -> None:
        """Once every store has listed, before the first pass: say so (and create what is fixed)."""

    @abstractmethod
    async def reconcile(self) -> Outcome:
        """One pass: make the cluster match what the stores say."""

    @abstractmethod
    def reconciled(self, outcome: Outcome) -> None:
        """Log what a pass changed."""
