"""Events, as kube-scheduler writes them (events.k8s.io/v1): the one recorder of the package.

The scheduler records from its hot path: ``record`` only queues the event, a background
task sends it through its own client, from a bounded buffer (as kube-scheduler's event
broadcaster does), so a burst of events never slows binding and, if the API server cannot
keep up, the oldest news is dropped with a log line rather than memory growing.

The operator posts few events and wants them visible when its reconcile returns: ``post``
sends at once, and (with ``repeat_after``) does not repeat an identical event while the
previous one is recent, so a periodic resync does not flood the namespace. It writes
core/v1 Events (``api_version="v1"``), as OpenShift's operators do and its RBAC grants.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path

log = logging.getLogger(__name__)

MAX_NOTE = 1024
"""The API server refuses a longer note (message)."""

EventApi = Literal["events.k8s.io/v1", "v1"]


class PodReference(Protocol):
    """A pod an event is about (the scheduler's PodInfo is one)."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...


@dataclass(frozen=True)
class ObjectReference:
    """Any other object an event is about."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""


def _reference(regarding: ObjectReference | PodReference) -> dict[str, str]:
    if isinstance(regarding, ObjectReference):
        api_version, kind = regarding.api_version, regarding.kind
    else:
        api_version, kind = "v1", "Pod"
    return {
        "apiVersion": api_version,
        "kind": kind,
        "namespace": regarding.namespace,
        "name": regarding.name,
        "uid": regarding.uid,
    }


def _now(fraction: bool) -> str:
    """MicroTime (events.k8s.io's eventTime) or Time (core/v1's timestamps)."""
    return datetime.datetime.now(datetime.UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ" if fraction else "%Y-%m-%dT%H:%M:%SZ"
    )


class EventRecorder:
    def __init__(
        self,
        api: ApiClient,
        *,
        api_version: EventApi = "events.k8s.io/v1",
        buffer: int = 10000,
        repeat_after: float = 0.0,
        log_events: bool = False,
    ) -> None:
        self.api = api
        self.api_version = api_version
        self.repeat_after = repeat_after
        """``post`` skips an event identical to one sent less than this many seconds ago."""
        self.log_events = log_events
        """``post`` also logs each event it sends (Warning events as warnings)."""
        self.hostname = socket.gethostname()
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=buffer)
        self._task: asyncio.Task[None] | None = None
        self._sent: dict[tuple[str, str, str, str], float] = {}
        self.dropped = 0

    def event(
        self,
        regarding: ObjectReference | PodReference,
        reporter: str,
        event_type: str,
        reason: str,
        action: str,
        note: str,
    ) -> dict[str, Any]:
        """The Event object, in this recorder's API version."""
        reference = _reference(regarding)
        name = f"{regarding.name}.{uuid.uuid4().hex[:16]}"
        metadata = {"name": name, "namespace": regarding.namespace}
        instance = f"{reporter}-{self.hostname}"
        if self.api_version == "v1":
            stamp = _now(fraction=False)
            return {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": metadata,
                "involvedObject": reference,
                "action": action,
                "reason": reason,
                "message": note[:MAX_NOTE],
                "type": event_type,
                "source": {"component": reporter},
                "reportingComponent": reporter,
                "reportingInstance": instance,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "count": 1,
            }
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": metadata,
            "eventTime": _now(fraction=True),
            "reportingController": reporter,
            "reportingInstance": instance,
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": note[:MAX_NOTE],
            "regarding": reference,
        }

    # -- queued (the scheduler) ---------------------------------------------------------------
    def start(self) -> None:
        """Start sending what ``record`` queues."""
        self._task = asyncio.create_task(self._run(), name="event-recorder")

    async def stop(self, drain_seconds: float = 2.0) -> None:
        """Send what is buffered (for at most `drain_seconds`), then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), drain_seconds)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def record(
        self,
        regarding: ObjectReference | PodReference,
        reporter: str,
        event_type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """Queue an event for sending; never blocks (a full buffer drops it)."""
        body = self.event(regarding, reporter, event_type, reason, action, note)
        try:
            self._queue.put_nowait(body)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("event buffer full: dropped %d events so far", self.dropped)

    def scheduled(self, pod: PodReference, scheduler_name: str, node: str) -> None:
        """kube-scheduler's Normal/Scheduled event, once a pod is bound."""
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self.record(pod, scheduler_name, "Normal", "Scheduled", "Binding", note)

    def failed(self, pod: PodReference, scheduler_name: str, message: str) -> None:
        """kube-scheduler's Warning/FailedScheduling event, when a pod fits nowhere (or errors)."""
        self.record(pod, scheduler_name, "Warning", "FailedScheduling", "Scheduling", message)

    async def _run(self) -> None:
        while True:
            body = await self._queue.get()
            try:
                await self._send(body)
            except (ApiError, OSError) as error:
                log.debug("could not record event %s: %s", body["reason"], error)
            except Exception:
                log.exception("unexpected error recording an event")
            finally:
                self._queue.task_done()

    async def _send(self, body: dict[str, Any]) -> None:
        await self.api.create(resource_path(self.api_version, "events", body["metadata"]["namespace"]), body)

    # -- at once (the operator) ---------------------------------------------------------------
    async def post(
        self,
        regarding: ObjectReference | PodReference,
        reporter: str,
        event_type: str,
        reason: str,
        action: str,
        note: str,
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
        try:
            await self._send(self.event(regarding, reporter, event_type, reason, action, note))
        except (ApiError, OSError) as error:
            log.warning(
                "could not post event %s on %s/%s: %s", reason, regarding.namespace, regarding.name, error
            )

    def forget(self, uid: str) -> None:
        """Drop the memory of a deleted object's events (see ``repeat_after``)."""
        self._sent = {key: at for key, at in self._sent.items() if key[0] != uid}
