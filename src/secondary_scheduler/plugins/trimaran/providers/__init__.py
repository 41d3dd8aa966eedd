"""Where node metrics come from: each provider turns one source into load-watcher's WatcherMetrics.

Library-mode providers (Prometheus, metrics-server) build the document for a window, as
load-watcher does in-process; the load-watcher service provider reads the one it serves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from secondary_scheduler.plugins.trimaran.watchermetrics import (
    Metric,
    NodeMetrics,
    WatcherMetrics,
    Window,
)

WINDOW_SECONDS = {"15m": 15 * 60, "10m": 10 * 60, "5m": 5 * 60}
"""load-watcher's windows, in the order it prefers them."""
WINDOWS = tuple(WINDOW_SECONDS)
FETCH_TIMEOUT_SECONDS = 10.0
"""Upper bound of one request to a source (upstream's per-query timeout)."""


class FetchError(Exception):
    """A fetch failed; the message says what to check (address, credentials, RBAC, TLS)."""


class Provider(Protocol):
    windows: tuple[str, ...]
    """Windows to try, best first; a fetch of one that fails in any part is discarded."""

    async def fetch(self, window: str) -> WatcherMetrics:
        """Every node's metrics over ``window``; raises FetchError."""
        ...

    async def close(self) -> None: ...


def watcher_metrics(
    nodes: Mapping[str, Sequence[Metric]], window: str, source: str, now: float
) -> WatcherMetrics:
    """The document load-watcher builds for a window ending now (Unix seconds, whole)."""
    end = int(now)
    return WatcherMetrics.model_validate(
        {
            "timestamp": end,
            "window": Window(duration=window, start=end - WINDOW_SECONDS.get(window, 0), end=end),
            "source": source,
            "data": {"NodeMetricsMap": {name: NodeMetrics(metrics=list(m)) for name, m in nodes.items()}},
        }
    )
