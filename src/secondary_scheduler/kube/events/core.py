"""core/v1 Events posted at once, as client-go's ``tools/record`` writes them (the operator's).

The operator posts few events and wants them visible when its reconcile returns: ``post``
sends at once, and (with ``repeat_after``) does not repeat an identical event while the
previous one is recent, so a periodic resync does not flood the namespace. It writes
core/v1 Events, as OpenShift's operators do and its RBAC grants, through client-go
record's EventCorrelator (``correlator``): a repeat bumps the first Event's
``count``/``lastTimestamp``, ten messages for one reason are "(combined from similar
events)", and more than 25 events on one object are then limited to one per 5 minutes.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable, resource_path
from secondary_scheduler.kube.events.correlator import EventCorrelator
from secondary_scheduler.kube.events.objects import (
    MAX_NOTE,
    Regarding,
    describe,
    event_name,
    reference,
    stamp,
    unix_nanos,
)

log = logging.getLogger(__name__)


class CoreEventRecorder:
    """core/v1 Events, written when posted, correlated as client-go record does."""

    def __init__(
        self,
        api: ApiClient,
        *,
        repeat_after: float = 0.0,
        log_events: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api = api
        self.repeat_after = repeat_after
        """``post`` skips an event identical to one sent less than this many seconds ago."""
        self.log_events = log_events
        """``post`` also logs each event it sends (Warning events as warnings)."""
        self.clock = clock
        """Wall-clock seconds since the epoch (a fake one in tests)."""
        self.hostname = socket.gethostname()
        self.correlator = EventCorrelator(clock)
        self._sent: dict[tuple[str, str, str, str], float] = {}

    def event(
        self, regarding: Regarding, reporter: str, event_type: str, reason: str, action: str, note: str
    ) -> dict[str, Any]:
        """The core/v1 Event object."""
        now = self.clock()
        at = stamp(now, fraction=False)
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": event_name(regarding.name, unix_nanos(self.clock, now)),
                "namespace": regarding.namespace or "default",
            },
            "involvedObject": reference(regarding),
            "action": action,
            "reason": reason,
            "message": note[:MAX_NOTE],
            "type": event_type,
            "source": {"component": reporter},
            "reportingComponent": reporter,
            "reportingInstance": f"{reporter}-{self.hostname}",
            "firstTimestamp": at,
            "lastTimestamp": at,
            "count": 1,
        }

    async def post(
        self, regarding: Regarding, reporter: str, event_type: str, reason: str, action: str, note: str
    ) -> None:
        """Send an event now, unless an identical one went out recently; never raises."""
        key = (regarding.uid, event_type, reason, note)
        now = time.monotonic()
        if self.repeat_after and now - self._sent.get(key, -self.repeat_after) < self.repeat_after:
            return
        self._sent[key] = now
        if self.log_events:
            level = logging.WARNING if event_type == "Warning" else logging.INFO
            log.log(level, "%s/%s: %s: %s", regarding.namespace, regarding.name, reason, note)
        await self._write(self.event(regarding, reporter, event_type, reason, action, note))

    async def _write(self, body: dict[str, Any]) -> None:
        """client-go record's recordToSink/recordEvent: correlate, then patch the count or create."""
        result = self.correlator.correlate(body)
        if result.skip:
            log.debug("event %s dropped by the spam filter", describe(body))
            return
        event, metadata = result.event, result.event["metadata"]
        try:
            written = None
            if result.patch is not None:
                path = resource_path("v1", "events", metadata["namespace"], metadata["name"])
                try:
                    written = await self.api.patch(path, result.patch, patch_type="strategic")
                except ApiError as error:
                    if not error.not_found:
                        raise
            if written is None:
                metadata.pop("resourceVersion", None)
                written = await self.api.create(resource_path("v1", "events", metadata["namespace"]), event)
            self.correlator.update_state(written)
        except (ApiError, ApiUnavailable, OSError) as error:
            log.warning("could not post event %s: %s", describe(event), error)

    def forget(self, uid: str) -> None:
        """Drop the memory of a deleted object's events (see ``repeat_after``)."""
        self._sent = {key: at for key, at in self._sent.items() if key[0] != uid}
