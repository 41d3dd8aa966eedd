"""What the Trimaran plugins share across profiles, registered once in the framework Handle.

The first Trimaran plugin built creates it from the handle (``TrimaranServices.of``): with
the scheduler's API client and metrics registry in a live cluster, or, under ``secsched
score``, with a static provider serving the snapshot's metrics and the clock stopped at
the snapshot's ``now``. It registers itself as a handle service (the runtime starts it
after the informers synced and stops it on shutdown), follows the pod watch and hears
every binding, so the scheduling loop knows nothing about Trimaran. ``secsched replay`` creates
it first (``of`` with its simulated providers and refresh period), on the simulated clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.plugins.trimaran.collector import REFRESH_INTERVAL_SECONDS
from secondary_scheduler.plugins.trimaran.collectorset import MetricsCollectors, ProviderFactory
from secondary_scheduler.plugins.trimaran.providers.static import StaticProvider
from secondary_scheduler.plugins.trimaran.recentlyscheduled import RecentlyScheduled
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

log = logging.getLogger(__name__)

SERVICE = "trimaran"
"""The name of the Trimaran services in ``Handle.services``."""


class TrimaranServices:
    def __init__(
        self,
        *,
        api: ApiClient | None = None,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
        interval: float = REFRESH_INTERVAL_SECONDS,
        provider_factory: ProviderFactory | None = None,
    ) -> None:
        """``clock`` is wall time (Unix seconds), which metrics windows and bind stamps are in."""
        self.telemetry = TrimaranMetrics(registry)
        self.collectors = MetricsCollectors(
            self.telemetry, api=api, clock=clock, interval=interval, provider_factory=provider_factory
        )
        self.recently_scheduled = RecentlyScheduled(self.telemetry, clock=clock)
        self.fetch_on_start = True
        """False for a snapshot without metrics: there is nothing to fetch, as before a first fetch."""

    @classmethod
    def of(
        cls,
        handle: Handle,
        *,
        provider_factory: ProviderFactory | None = None,
        interval: float = REFRESH_INTERVAL_SECONDS,
    ) -> TrimaranServices:
        """The handle's Trimaran services, created and wired into it on first use.

        ``provider_factory`` and ``interval`` replace the real providers and the refresh period
        when the services are created here (the replay serves simulated metrics on its own clock,
        ``handle.wall_clock``); they are refused when the services exist already or the handle
        schedules into a snapshot (which has its own static provider), rather than ignored.
        """
        customised = provider_factory is not None or interval != REFRESH_INTERVAL_SECONDS
        existing = handle.services.get(SERVICE)
        if existing is not None:
            if customised:
                raise ValueError(
                    "the Trimaran services of this handle exist already: pass provider_factory and "
                    "interval to the first TrimaranServices.of, before any plugin is built"
                )
            return handle.service(SERVICE, cls)
        snapshot = handle.snapshot
        if snapshot is None:
            services = cls(
                api=handle.client,
                registry=handle.metrics_registry,
                clock=handle.wall_clock,
                interval=interval,
                provider_factory=provider_factory,
            )
        else:
            if customised:
                raise ValueError(
                    "a handle scheduling into a snapshot serves the snapshot's metrics: "
                    "provider_factory and interval cannot replace them"
                )
            metrics = snapshot.data.get("metrics")
            static = StaticProvider(metrics if isinstance(metrics, WatcherMetrics) else None)
            services = cls(
                registry=handle.metrics_registry,
                clock=lambda: snapshot.now,
                provider_factory=lambda source: static,
            )
            services.fetch_on_start = static.metrics is not None
            for pod, node, timestamp in snapshot.data.get("recentlyScheduled") or ():
                services.recently_scheduled.record(pod, node, timestamp)
        handle.register_service(SERVICE, services)
        handle.watch_pods(services.recently_scheduled)
        handle.on_pod_bound(lambda pod, node: services.recently_scheduled.record(pod, node))
        return services

    async def start(self) -> None:
        """Start the collectors the plugins asked for; returns after each one's first fetch."""
        if self.fetch_on_start:
            await self.collectors.start()

    async def stop(self) -> None:
        await self.collectors.stop()
