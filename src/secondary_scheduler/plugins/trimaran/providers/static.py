"""A fixed snapshot as a provider: ``secsched score`` explains a cycle without touching the network."""

from __future__ import annotations

from secondary_scheduler.plugins.trimaran.providers import FetchError
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics


class StaticProvider:
    def __init__(self, metrics: WatcherMetrics | None) -> None:
        """``metrics`` None: a snapshot without metrics, as before a first fetch."""
        self.metrics = metrics
        window = metrics.window.duration if metrics is not None else ""
        self.windows: tuple[str, ...] = (window or "snapshot",)

    async def fetch(self, window: str) -> WatcherMetrics:
        if self.metrics is None:
            raise FetchError("the snapshot file has no metrics")
        return self.metrics

    async def close(self) -> None:
        """Nothing to release."""
