"""Where node metrics come from: each provider turns one source into load-watcher's WatcherMetrics.

Library-mode providers (Prometheus, metrics-server) build the document for a window, as
load-watcher does in-process; the load-watcher service provider reads the one it serves.

A provider that computes its values as arrays in the first place (the replay's simulated
sources) may also be a ``ReadingsProvider``: the collector then asks it for the document's
header and the per-node values as arrays (``NodeReadings``), and the metrics view takes those
as they are instead of parsing a document of thousands of models it would have to build first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from secondary_scheduler.framework.aliases import FloatArray
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    Metric,
    NodeMetrics,
    ResourceDataArrays,
    WatcherMetrics,
    Window,
)

WINDOW_SECONDS = {"15m": 15 * 60, "10m": 10 * 60, "5m": 5 * 60}
"""load-watcher's windows, in the order it prefers them."""
WINDOWS = tuple(WINDOW_SECONDS)
FETCH_TIMEOUT_SECONDS = 10.0
"""Upper bound of one request to a source (upstream's per-query timeout)."""
YIELD_EVERY = 500
"""Nodes (or samples) turned into models between two yields to the event loop while a fetched
snapshot is assembled: building thousands of models at once would hold up scheduling cycles and
bindings for tens of milliseconds per thousand nodes, every refresh."""


class FetchError(Exception):
    """A fetch failed; the message says what to check (address, credentials, RBAC, TLS)."""


class Provider(Protocol):
    windows: tuple[str, ...]
    """Windows to try, best first; a fetch of one that fails in any part is discarded."""

    async def fetch(self, window: str) -> WatcherMetrics:
        """Every node's metrics over ``window``; raises FetchError."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class NodeReadings:
    """The per-node values of a fetched document, as arrays: entry ``i`` is node ``names[i]``.

    Each entry is what Trimaran's reading of that node's metrics in the document would be
    (``watchermetrics.resource_data`` for ``cpu`` and ``memory``, TargetLoadPacking's
    ``node_cpu_percent``); a node the source does not report is not in ``names``.
    """

    names: Sequence[str]
    """The reported nodes; a provider that reports the same nodes each time should hand out the
    same sequence object, so that the view maps them onto its nodes once."""
    cpu: ResourceDataArrays
    memory: ResourceDataArrays
    cpu_percent: FloatArray
    """TargetLoadPacking's CPU reading (the last AVG or Latest value), NaN where there is none."""


@runtime_checkable
class ReadingsProvider(Provider, Protocol):
    """A provider whose values are arrays already: the collector fetches them without a node map."""

    async def fetch_readings(self, window: str) -> tuple[WatcherMetrics, NodeReadings]:
        """What ``fetch(window)`` returns, as its header (timestamp, window, source; no nodes) and
        its nodes' values as arrays; raises FetchError."""
        ...


def watcher_metrics(
    nodes: Mapping[str, Sequence[Metric]], window: str, source: str, now: float
) -> WatcherMetrics:
    """The document load-watcher builds for a window ending now (Unix seconds, whole)."""
    return _document({name: NodeMetrics(metrics=list(m)) for name, m in nodes.items()}, window, source, now)


async def watcher_metrics_yielding(
    nodes: Mapping[str, Sequence[Metric]], window: str, source: str, clock: Callable[[], float]
) -> WatcherMetrics:
    """``watcher_metrics``, yielding to the event loop every ``YIELD_EVERY`` nodes; ``clock`` is read
    once the nodes are built, as ``watcher_metrics``' caller reads it just before."""
    built: dict[str, NodeMetrics] = {}
    for count, (name, metrics) in enumerate(nodes.items(), 1):
        built[name] = NodeMetrics(metrics=list(metrics))
        if count % YIELD_EVERY == 0:
            await asyncio.sleep(0)
    return _document(built, window, source, clock())


def _document(nodes: Mapping[str, NodeMetrics], window: str, source: str, now: float) -> WatcherMetrics:
    end = int(now)
    return WatcherMetrics.model_validate(
        {
            "timestamp": end,
            "window": Window(duration=window, start=end - WINDOW_SECONDS.get(window, 0), end=end),
            "source": source,
            "data": {"NodeMetricsMap": dict(nodes)},
        }
    )
