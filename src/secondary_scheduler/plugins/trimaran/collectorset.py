"""The registry of collectors: one per distinct metric source, whoever asks for it.

Plugins in several profiles that name the same source (same provider, address and
credentials, or the same watcherAddress) get the same collector and the same view of it,
so the source is polled once and each snapshot is parsed once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.plugins.trimaran.args import KUBERNETES_METRICS_SERVER, PROMETHEUS, TrimaranArgs
from secondary_scheduler.plugins.trimaran.collector import REFRESH_INTERVAL_SECONDS, MetricsCollector
from secondary_scheduler.plugins.trimaran.nodeusage import NodeMetricsView
from secondary_scheduler.plugins.trimaran.providers import Provider
from secondary_scheduler.plugins.trimaran.providers.metricsserver import MetricsServerProvider
from secondary_scheduler.plugins.trimaran.providers.prometheus import PrometheusProvider
from secondary_scheduler.plugins.trimaran.providers.watcher import WatcherProvider
from secondary_scheduler.plugins.trimaran.source import WATCHER, MetricSource
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics

log = logging.getLogger(__name__)

ProviderFactory = Callable[[MetricSource], Provider]
"""Builds the provider of a source; raises ValueError (at start) for one that cannot work."""


class MetricsCollectors:
    def __init__(
        self,
        telemetry: TrimaranMetrics,
        *,
        api: ApiClient | None = None,
        clock: Callable[[], float] = time.time,
        interval: float = REFRESH_INTERVAL_SECONDS,
        provider_factory: ProviderFactory | None = None,
    ) -> None:
        """``api`` serves metrics-server and tokenSecretRef; ``provider_factory`` replaces the real
        providers (``secsched score`` reads a file instead)."""
        self.telemetry = telemetry
        self.api = api
        self.clock = clock
        self.interval = interval
        self._factory = provider_factory or self._provider
        self._views: dict[MetricSource, NodeMetricsView] = {}

    def __len__(self) -> int:
        return len(self._views)

    def view_for(self, args: TrimaranArgs) -> NodeMetricsView:
        """The shared view (and collector) of the source ``args`` name, created on first use."""
        source = MetricSource.of(args)
        view = self._views.get(source)
        if view is None:
            label = self._unique_label(source.label)
            collector = MetricsCollector(
                label, self._factory(source), self.telemetry, clock=self.clock, interval=self.interval
            )
            view = NodeMetricsView(collector, self.telemetry, source.kind)
            self._views[source] = view
            log.info("metrics source %s: collector created", label)
        return view

    def collectors(self) -> list[MetricsCollector]:
        return [view.collector for view in self._views.values()]

    async def start(self) -> None:
        """Start every collector not started yet (concurrently); returns after their first fetches."""
        await asyncio.gather(*(collector.start() for collector in self.collectors()))

    async def stop(self) -> None:
        await asyncio.gather(*(collector.stop() for collector in self.collectors()))

    def _unique_label(self, label: str) -> str:
        """Sources differing only in credentials get distinct labels (#2, #3...) for their gauges."""
        taken = {view.label for view in self._views.values()}
        candidate, number = label, 1
        while candidate in taken:
            number += 1
            candidate = f"{label} #{number}"
        return candidate

    def _provider(self, source: MetricSource) -> Provider:
        if source.kind == WATCHER:
            return WatcherProvider(source)
        if source.kind == PROMETHEUS:
            return PrometheusProvider(source, self.api, clock=self.clock)
        if source.kind == KUBERNETES_METRICS_SERVER:
            return MetricsServerProvider(self.api, clock=self.clock)
        raise ValueError(
            f"invalid MetricProvider.Type, got {source.kind}: this scheduler supports Prometheus and "
            "KubernetesMetricsServer, or a load-watcher service (watcherAddress)"
        )
