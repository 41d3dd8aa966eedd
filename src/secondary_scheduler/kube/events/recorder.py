"""events.k8s.io/v1 Events with series, as client-go's ``tools/events`` writes them (kube-scheduler's).

``record`` builds the Event and queues it for the senders (``sender.EventSender``); a sender
then accounts for it in the cache and writes what is due:

* An event isomorphic to one already in the cache (same type, action, reason, reporting
  controller and instance, regarding and related object, resourceVersion included; the
  note is *not* compared) is not written again. The second occurrence turns the cached
  Event into a series (``series.count`` 2) and patches it; later ones only bump the cached
  ``series.count`` and ``series.lastObservedTime``.
* Every 6 minutes (``FINISH_SERIES``) a series last observed more than 6 minutes ago is
  patched with its final count and forgotten, as is a single event older than 6 minutes;
  every 30 minutes (``REFRESH_SERIES``) every live series is patched with its count so far.
* A write that failed without an answer is tried again (``sender``); a refused one is
  dropped, except a series' AlreadyExists (tried again).
* Nothing is truncated here: a reporter that wants a shorter note shortens it itself.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable, resource_path
from secondary_scheduler.kube.events.objects import (
    EVENT_TYPES,
    DropReason,
    Regarding,
    describe,
    event_name,
    parse_stamp,
    reference,
    stamp,
    unix_nanos,
)
from secondary_scheduler.kube.events.sender import QUEUE_LENGTH, RETRY_SLEEP, SENDERS, EventSender

log = logging.getLogger(__name__)

API_VERSION = "events.k8s.io/v1"
FINISH_SERIES = 6 * 60.0
"""client-go's finishTime: how often series are closed, and how long an event stays cached."""
REFRESH_SERIES = 30 * 60.0
"""client-go's refreshTime: how often a live series' count is written."""

EventKey = tuple[str, str, str, str, str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


def event_key(event: dict[str, Any]) -> EventKey:
    """client-go's getKey: what makes two events isomorphic (the note is not part of it)."""
    return (
        str(event.get("type", "")),
        str(event.get("action", "")),
        str(event.get("reason", "")),
        str(event.get("reportingController", "")),
        str(event.get("reportingInstance", "")),
        tuple(sorted((event.get("regarding") or {}).items())),
        tuple(sorted((event.get("related") or {}).items())),
    )


class EventRecorder(EventSender):
    """Queued events.k8s.io/v1 Events, isomorphic ones counted in series."""

    def __init__(
        self,
        api: ApiClient,
        *,
        queue_length: int = QUEUE_LENGTH,
        senders: int = SENDERS,
        clock: Callable[[], float] = time.time,
        retry_sleep: float = RETRY_SLEEP,
        on_dropped: Callable[[DropReason, int], None] | None = None,
    ) -> None:
        super().__init__(
            queue_length=queue_length, senders=senders, retry_sleep=retry_sleep, on_dropped=on_dropped
        )
        self.api = api
        self.clock = clock
        """Wall-clock seconds since the epoch (a fake one in tests)."""
        self.hostname = socket.gethostname()
        self.cache: dict[EventKey, dict[str, Any]] = {}
        """client-go's eventCache: the last Event written per isomorphism key."""
        self._lock = asyncio.Lock()

    def event(
        self, regarding: Regarding, reporter: str, event_type: str, reason: str, action: str, note: str
    ) -> dict[str, Any]:
        """The events.k8s.io/v1 Event object."""
        now = self.clock()
        return {
            "apiVersion": API_VERSION,
            "kind": "Event",
            "metadata": {
                "name": event_name(regarding.name, unix_nanos(self.clock, now)),
                "namespace": regarding.namespace or "default",
            },
            "eventTime": stamp(now, fraction=True),
            "reportingController": reporter,
            "reportingInstance": f"{reporter}-{self.hostname}",
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": note,
            "regarding": reference(regarding),
        }

    def start(self) -> None:
        """Start the senders, and the timers that write and close series."""
        super().start()
        self._tasks += [
            asyncio.create_task(
                self._every(REFRESH_SERIES, self.refresh_series), name="event-series-refresh"
            ),
            asyncio.create_task(self._every(FINISH_SERIES, self.finish_series), name="event-series-finish"),
        ]

    def record(
        self, regarding: Regarding, reporter: str, event_type: str, reason: str, action: str, note: str
    ) -> None:
        """Queue an event for sending; never blocks (a full queue drops it, counted and logged)."""
        if event_type not in EVENT_TYPES:
            log.error("unsupported event type %r: event %s not recorded", event_type, reason)
            return
        self.enqueue(self.event(regarding, reporter, event_type, reason, action, note))

    def observe(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Account for a new event in the cache; what to write now (a copy), or None.

        A first event is cached and written; a second isomorphic one makes the cached
        Event a series of 2, written (patched) now; later ones only count.
        """
        key = event_key(event)
        cached = self.cache.get(key)
        if cached is None:
            self.cache[key] = event
            return _copy(event)
        observed = stamp(self.clock(), fraction=True)
        series = cached.get("series")
        if series is not None:
            series["count"] += 1
            series["lastObservedTime"] = observed
            return None
        cached["series"] = {"count": 2, "lastObservedTime": observed}
        return _copy(cached)

    async def deliver(self, event: dict[str, Any]) -> None:
        async with self._lock:
            write = self.observe(event)
        if write is not None:
            await self.attempt(write)

    async def write(self, event: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        """client-go's recordEvent: patch a series (create it if gone), create the rest.

        Returns the Event the server answered with (or None) and whether to try again.
        """
        metadata = event["metadata"]
        series = event.get("series")
        try:
            if series is not None:
                path = resource_path(API_VERSION, "events", metadata["namespace"], metadata["name"])
                try:
                    return await self.api.patch(path, {"series": series}, patch_type="strategic"), False
                except ApiError as error:
                    if not error.not_found:
                        raise
            metadata.pop("resourceVersion", None)
            return await self.api.create(
                resource_path(API_VERSION, "events", metadata["namespace"]), event
            ), False
        except ApiError as error:
            if error.conflict and error.reason == "AlreadyExists":
                if series is not None:
                    return None, True
                log.debug("server rejected event %s (will not retry!): %s", describe(event), error)
            else:
                self._drop("rejected")
                log.error("server rejected event %s (will not retry!): %s", describe(event), error)
            return None, False
        except (ApiUnavailable, OSError) as error:
            log.error("unable to write event %s (may retry after sleeping): %s", describe(event), error)
            return None, True

    async def refresh_series(self) -> None:
        """client-go's refreshExistingEventSeries: write every live series' count so far."""
        async with self._lock:
            for key, event in list(self.cache.items()):
                if event.get("series") is None:
                    continue
                written, retry = await self.write(event)
                if not retry and written is not None:
                    self.cache[key] = written

    async def finish_series(self) -> None:
        """client-go's finishSeries: close series quiet for FINISH_SERIES, forget old single events."""
        async with self._lock:
            horizon = self.clock() - FINISH_SERIES
            for key, event in list(self.cache.items()):
                series = event.get("series")
                if series is not None:
                    if parse_stamp(series["lastObservedTime"]) < horizon:
                        _, retry = await self.write(event)
                        if not retry:
                            del self.cache[key]
                elif parse_stamp(event["eventTime"]) < horizon:
                    del self.cache[key]

    @staticmethod
    async def _every(period: float, action: Callable[[], Any]) -> None:
        """wait.Until: `period` after each run ends (its first run, on an empty cache, is skipped)."""
        while True:
            await asyncio.sleep(period)
            try:
                await action()
            except Exception:
                log.exception("unexpected error in the event series timer")


def _copy(event: dict[str, Any]) -> dict[str, Any]:
    """A copy deep enough that the cache's later changes do not reach a write under way."""
    copy = dict(event)
    copy["metadata"] = dict(event["metadata"])
    if event.get("series") is not None:
        copy["series"] = dict(event["series"])
    return copy
