"""What the Trimaran plugins share across profiles, registered once in the framework Handle.

The runtime creates it (with its API client and Prometheus registry), puts it in
``handle.services[SERVICE]`` before building the profiles' frameworks, then awaits
``start()``; it calls ``recently_scheduled.record`` after each successful bind, feeds pod
watch events to ``recently_scheduled`` (``replace``/``event``), and awaits ``stop()`` on
shutdown. Plugins find it with ``TrimaranServices.of(handle)``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.plugins.trimaran.collector import REFRESH_INTERVAL_SECONDS
from secondary_scheduler.plugins.trimaran.collectors import MetricsCollectors, ProviderFactory
from secondary_scheduler.plugins.trimaran.recentlyscheduled import RecentlyScheduled
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics

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

    @classmethod
    def of(cls, handle: Handle) -> TrimaranServices:
        """The handle's services, registering default ones (no API client, own registry) if it has none."""
        if SERVICE not in handle.services:
            log.info(
                "no Trimaran services in the framework handle: using defaults (no Kubernetes API client)"
            )
            handle.services[SERVICE] = cls()
        return handle.service(SERVICE, cls)

    async def start(self) -> None:
        """Start the collectors the plugins asked for; returns after each one's first fetch."""
        await self.collectors.start()

    async def stop(self) -> None:
        await self.collectors.stop()
