"""A load-watcher service (``watcherAddress``): its ``GET /watcher`` body is the snapshot as is."""

from __future__ import annotations

import ssl

import httpx
from pydantic import ValidationError

from secondary_scheduler.plugins.trimaran.providers import FETCH_TIMEOUT_SECONDS, FetchError
from secondary_scheduler.plugins.trimaran.source import MetricSource
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

WATCHER_PATH = "/watcher"
SERVED = "served"
"""The one "window" of a load-watcher service: whichever it serves (it picks 15m, 10m or 5m itself)."""


class WatcherProvider:
    windows: tuple[str, ...] = (SERVED,)

    def __init__(self, source: MetricSource, *, timeout: float = FETCH_TIMEOUT_SECONDS) -> None:
        self.url = source.address.rstrip("/") + WATCHER_PATH
        # The system's trust store, like the Prometheus provider: it holds the CAs a cluster injects.
        self._http = httpx.AsyncClient(verify=ssl.create_default_context(), timeout=timeout)

    async def fetch(self, window: str) -> WatcherMetrics:
        try:
            response = await self._http.get(self.url)
        except httpx.HTTPError as error:
            raise FetchError(f"GET {self.url}: {error!r} (check watcherAddress)") from error
        if response.status_code != 200:
            hint = ": load-watcher has no metrics yet" if response.status_code == 404 else ""
            raise FetchError(f"GET {self.url}: HTTP {response.status_code}{hint}")
        try:
            return WatcherMetrics.parse(response.json())
        except (ValueError, ValidationError) as error:
            raise FetchError(
                f"GET {self.url}: the body is not a WatcherMetrics document ({error})"
            ) from error

    async def close(self) -> None:
        await self._http.aclose()
