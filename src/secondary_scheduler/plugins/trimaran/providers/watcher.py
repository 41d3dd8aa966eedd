"""A load-watcher service (``watcherAddress``): its ``GET /watcher`` body is the snapshot as is."""

from __future__ import annotations

import ssl

import aiohttp
import orjson
from pydantic import ValidationError

from secondary_scheduler.httpsession import TRANSPORT_ERRORS, LazySession
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
        self._http = LazySession(
            tls=ssl.create_default_context(), timeout=aiohttp.ClientTimeout(total=timeout)
        )

    async def fetch(self, window: str) -> WatcherMetrics:
        try:
            async with self._http().get(self.url) as response:
                status, content = response.status, await response.read()
        except TRANSPORT_ERRORS as error:
            raise FetchError(f"GET {self.url}: {error!r} (check watcherAddress)") from error
        if status != 200:
            hint = ": load-watcher has no metrics yet" if status == 404 else ""
            raise FetchError(f"GET {self.url}: HTTP {status}{hint}")
        try:
            return WatcherMetrics.parse(orjson.loads(content))
        except (ValueError, ValidationError) as error:
            raise FetchError(
                f"GET {self.url}: the body is not a WatcherMetrics document ({error})"
            ) from error

    async def close(self) -> None:
        await self._http.close()
