"""Bounded expiring caches for delegated authentication and authorization answers.

kube-scheduler caches TokenReview and SubjectAccessReview answers for a few seconds so a
scrape every few seconds costs one review, not one per request; entries expire by their own
TTL and the oldest go first when the cache is full, so a flood of distinct tokens cannot
grow memory without bound.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_MAX_ENTRIES = 8192
"""As many entries as client-go's webhook authorizer keeps (its LRU expiring cache)."""


class ExpiringCache(Generic[K, V]):
    """A least-recently-used map whose entries each expire after their own TTL."""

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The live value for `key`, or None (an expired entry is dropped)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self.clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def set(self, key: K, value: V, ttl: float) -> None:
        """Keep `value` for `ttl` seconds; a TTL of zero or less keeps nothing."""
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self.clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class SingleFlight(Generic[K, V]):
    """Concurrent callers asking for the same key share one call (Go's singleflight)."""

    def __init__(self) -> None:
        self._running: dict[K, asyncio.Future[V]] = {}

    async def do(self, key: K, call: Callable[[], Awaitable[V]]) -> V:
        running = self._running.get(key)
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            result = await call()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as error:
            future.set_exception(error)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        else:
            future.set_result(result)
            return result
        finally:
            del self._running[key]
