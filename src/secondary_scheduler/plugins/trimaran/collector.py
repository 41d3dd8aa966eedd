"""One metric source's collector: fetches in the background, hands out the latest snapshot.

Scheduling cycles never wait on the network: they read whatever snapshot the last refresh
left. A refresh tries the provider's windows best first (15m, 10m, 5m) and keeps the first
that fetched whole; if every window fails, the previous snapshots stay, as upstream keeps
them, but they age, and callers decide (``latest(max_age)``) whether to trust them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from secondary_scheduler.plugins.trimaran.providers import NodeReadings, Provider, ReadingsProvider
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

log = logging.getLogger(__name__)

REFRESH_INTERVAL_SECONDS = 30.0


@dataclass(frozen=True)
class Snapshot:
    """A fetched WatcherMetrics and when its data was taken (Unix seconds)."""

    metrics: WatcherMetrics
    window: str
    """The provider window it was fetched as (load-watcher's 15m, 10m, 5m; or the service's)."""
    taken_at: float
    """The document's own ``timestamp`` when set (a load-watcher service may serve old data), else
    when it arrived."""
    readings: NodeReadings | None = None
    """The nodes' values as arrays, from a ``ReadingsProvider``; ``metrics`` is then the document's
    header only (no node map): read the nodes from here (``nodeusage`` does)."""

    @property
    def node_count(self) -> int:
        """How many nodes the source reported."""
        if self.readings is not None:
            return len(self.readings.names)
        return len(self.metrics.data.node_metrics_map)


class MetricsCollector:
    def __init__(
        self,
        label: str,
        provider: Provider,
        telemetry: TrimaranMetrics,
        *,
        clock: Callable[[], float] = time.time,
        interval: float = REFRESH_INTERVAL_SECONDS,
    ) -> None:
        """``label`` names the source in logs and metrics; ``clock`` is wall time, as windows are."""
        self.label = label
        self.provider = provider
        self.telemetry = telemetry
        self.clock = clock
        self.interval = interval
        self._snapshots: dict[str, Snapshot] = {}
        self._task: asyncio.Task[None] | None = None
        self._first_refresh = asyncio.Event()
        self._last_problem: str | None = None
        self._listeners: list[Callable[[Snapshot], Awaitable[None]]] = []
        telemetry.metrics_age.labels(label).set_function(self._newest_age)

    def on_snapshot(self, listener: Callable[[Snapshot], Awaitable[None]]) -> None:
        """Await ``listener(snapshot)`` after each successful fetch, before the snapshot is handed out
        (a view prepares its arrays there, off the scheduling cycles)."""
        self._listeners.append(listener)

    @property
    def started(self) -> bool:
        return self._task is not None

    def latest(self, max_age: float | None = None) -> tuple[Snapshot | None, bool]:
        """The snapshot to use and whether it is stale.

        The best window (provider order) no older than ``max_age`` wins; None trusts any age
        (upstream). When every snapshot is too old, the newest comes back marked stale.
        """
        present = [self._snapshots[window] for window in self.provider.windows if window in self._snapshots]
        if not present:
            return None, False
        if max_age is None:
            return present[0], False
        for snapshot in present:
            if self.age(snapshot) <= max_age:
                return snapshot, False
        return min(present, key=self.age), True

    def age(self, snapshot: Snapshot) -> float:
        """Seconds since the snapshot's data was taken (never negative, whatever the clocks' skew)."""
        return max(0.0, self.clock() - snapshot.taken_at)

    async def refresh(self) -> bool:
        """One fetch, best window first; False (logged, counted) when every window failed."""
        problems = []
        for window in self.provider.windows:
            readings: NodeReadings | None = None
            try:
                if isinstance(self.provider, ReadingsProvider):
                    metrics, readings = await self.provider.fetch_readings(window)
                else:
                    metrics = await self.provider.fetch(window)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a refresh must never kill the loop
                self.telemetry.fetch_errors.labels(self.label).inc()
                problems.append(str(error) or repr(error))
                continue
            taken_at = float(metrics.timestamp) if metrics.timestamp > 0 else self.clock()
            snapshot = Snapshot(metrics, window, taken_at, readings)
            await self._prepare(snapshot)
            self._snapshots[window] = snapshot
            self._recovered(window, snapshot.node_count)
            return True
        self._failed("; ".join(problems))
        return False

    async def start(self) -> None:
        """Start refreshing every ``interval`` seconds; returns once the first fetch is done (or failed)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"trimaran metrics: {self.label}")
        await self._first_refresh.wait()

    async def stop(self) -> None:
        """Stop refreshing and release the provider's connections."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.provider.close()

    async def _run(self) -> None:
        try:
            await self.refresh()
        finally:
            self._first_refresh.set()
        while True:
            await asyncio.sleep(self.interval)
            await self.refresh()

    async def _prepare(self, snapshot: Snapshot) -> None:
        for listener in self._listeners:
            try:
                await listener(snapshot)
            except asyncio.CancelledError:
                raise
            except Exception:  # the snapshot is still good: whoever reads it parses it then
                log.exception("metrics from %s: preparing the new snapshot failed", self.label)

    def _recovered(self, window: str, nodes: int) -> None:
        if self._last_problem is not None:
            log.info("metrics from %s: fetched again (window %s, %d nodes)", self.label, window, nodes)
        self._last_problem = None

    def _failed(self, problem: str) -> None:
        """Warn when a problem starts or changes; the same failure every 30 s is only debug noise."""
        if problem != self._last_problem:
            kept = "keeping the previous snapshot" if self._snapshots else "no metrics yet"
            log.warning("metrics from %s: fetch failed (%s): %s", self.label, kept, problem)
        else:
            log.debug("metrics from %s: fetch failed again: %s", self.label, problem)
        self._last_problem = problem

    def _newest_age(self) -> float:
        """For the age gauge, read at scrape time: NaN until a first snapshot arrives."""
        if not self._snapshots:
            return math.nan
        return min(self.age(snapshot) for snapshot in self._snapshots.values())
