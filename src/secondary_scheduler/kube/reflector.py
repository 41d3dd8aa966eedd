"""List+watch that never loses an event: resourceVersion, bookmarks, relist on 410 Gone.

The handler sees one `replace(items)` after every (re)list, then `event(type, obj)` for
each change. A cache built on it therefore stays right across watch timeouts, API server
restarts and compaction, which is what kube-scheduler's informers guarantee.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from .client import JSON, ApiClient, ApiError, ApiUnavailable

log = logging.getLogger(__name__)


class WatchHandler(Protocol):
    def replace(self, items: list[JSON]) -> None: ...

    def event(self, kind: str, obj: JSON) -> None: ...


class _Expired(Exception):
    """The watch's resourceVersion is too old: only a fresh list can resynchronise."""


class Reflector:
    """Keeps one handler in step with one collection (optionally filtered by selectors)."""

    def __init__(
        self,
        client: ApiClient,
        path: str,
        handler: WatchHandler,
        *,
        params: Mapping[str, Any] | None = None,
        watch_timeout: int = 300,
        name: str | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.handler = handler
        self.params = dict(params or {})
        self.watch_timeout = watch_timeout
        self.name = name or path
        self.resource_version = ""
        self.synced = asyncio.Event()
        self.relists = 0

    async def _list(self) -> None:
        listing = await self.client.list_all(self.path, self.params)
        self.resource_version = listing.get("metadata", {}).get("resourceVersion", "")
        self.handler.replace(listing.get("items") or [])
        self.relists += 1
        self.synced.set()

    async def _watch_once(self) -> None:
        params = {
            **self.params,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": self.watch_timeout,
        }
        async for event in self.client.watch(self.path, params):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _Expired()
                raise ApiError(
                    int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", ""))
                )
            self.resource_version = obj.get("metadata", {}).get("resourceVersion", self.resource_version)
            if kind != "BOOKMARK":
                self.handler.event(str(kind), obj)

    async def run(self) -> None:
        """Run until cancelled: list, then watch and re-watch, relisting when history is gone."""
        backoff = 0.2
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch_once()
                backoff = 0.2
            except asyncio.CancelledError:
                raise
            except _Expired:
                log.info("%s: watch history expired (410); relisting", self.name)
                need_list = True
            except ApiError as error:
                need_list = need_list or error.gone
                log.warning("%s: %s; retrying in %.1fs", self.name, error, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            except ApiUnavailable as error:
                log.info("%s: connection lost (%s); resuming in %.1fs", self.name, error, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
