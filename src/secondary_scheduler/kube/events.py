"""Events, as kube-scheduler writes them (events.k8s.io/v1): the one recorder of the package.

The scheduler records from its hot path: ``record`` only queues the event, and sender tasks
(``SENDERS``) write queued events concurrently through the recorder's own client, as
client-go writes each from a goroutine of its own. So an Event follows its binding within a
request's time even under a backlog (a scheduler killed then loses only the few in flight),
and a slow API server delays Events, not bindings. The queue is bounded like client-go's
(``QUEUE_LENGTH``): a full queue drops the new event. Every event not written (queue full,
refused by the server, out of retries, still queued when ``stop`` gave up) is counted by
reason (``dropped``, and ``on_dropped`` for the scheduler's metric) and logged; ``stop``
first writes what is queued, for at most ``DRAIN_SECONDS``.

Sending follows client-go's events.k8s.io/v1 broadcaster (``tools/events``), which
kube-scheduler uses:

* An event isomorphic to one already in the cache (same type, action, reason, reporting
  controller and instance, regarding and related object, resourceVersion included; the
  note is *not* compared) is not written again. The second occurrence turns the cached
  Event into a series (``series.count`` 2) and patches it; later ones only bump the cached
  ``series.count`` and ``series.lastObservedTime``.
* Every 6 minutes (``FINISH_SERIES``) a series last observed more than 6 minutes ago is
  patched with its final count and forgotten, as is a single event older than 6 minutes;
  every 30 minutes (``REFRESH_SERIES``) every live series is patched with its count so far.
* A write that failed without an answer is tried again, at most 12 times, 10 to 12.5
  seconds apart; a refused one is dropped, except a series' AlreadyExists (tried again).
* Nothing is truncated here: kube-scheduler shortens only FailedScheduling's note, to the
  API's 1024-byte limit with a " ..." suffix (``failed`` does the same).

The operator posts few events and wants them visible when its reconcile returns: ``post``
sends at once, and (with ``repeat_after``) does not repeat an identical event while the
previous one is recent, so a periodic resync does not flood the namespace. It writes
core/v1 Events (``api_version="v1"``), as OpenShift's operators do and its RBAC grants,
through client-go record's EventCorrelator (``EventCorrelator``): a repeat bumps the first
Event's ``count``/``lastTimestamp``, ten messages for one reason are "(combined from similar
events)", and more than 25 events on one object are then limited to one per 5 minutes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import logging
import math
import random
import re
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable, resource_path

log = logging.getLogger(__name__)

MAX_NOTE = 1024
"""The API server refuses a longer note (events.k8s.io's NoteLengthLimit, in bytes)."""

FINISH_SERIES = 6 * 60.0
"""client-go's finishTime: how often series are closed, and how long an event stays cached."""
REFRESH_SERIES = 30 * 60.0
"""client-go's refreshTime: how often a live series' count is written."""
QUEUE_LENGTH = 1000
"""client-go's maxQueuedEvents: events recorded and not yet taken by a sender; more are dropped."""
SENDERS = 64
"""Events written at once at most. client-go starts a goroutine per event (bounded only by its
rate limiter); here as many as the scheduler's bindings in flight. Measured under a 250-pod
backlog on a loaded 2-core machine (tests/cluster/test_events_keep_up.py), where an Event
took a few hundred ms to be answered: 16 senders fell behind the bindings (the lag grew to
1-1.5 s over the burst; 115-122 Events still queued at a SIGTERM), 64 kept it flat at about
0.3 s (p99 0.5-0.7 s), the bindings no slower."""
DRAIN_SECONDS = 5.0
"""How long ``stop`` (a SIGTERM) goes on writing what is queued before dropping the rest."""
DROP_LOG_INTERVAL = 10.0
"""A full queue logs its drops at most this often (with the count so far), not once per event."""
DropReason = Literal["queue_full", "rejected", "retry_limit", "shutdown"]
MAX_TRIES = 12
"""client-go's maxTriesPerEvent."""
RETRY_SLEEP = 10.0
"""client-go's defaultSleepDuration, jittered by up to a quarter more between tries."""

EventApi = Literal["events.k8s.io/v1", "v1"]
EVENT_TYPES = ("Normal", "Warning")

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")


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


EventKey = tuple[str, str, str, str, str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


def _reference(regarding: ObjectReference | PodReference) -> dict[str, str]:
    if isinstance(regarding, ObjectReference):
        api_version, kind = regarding.api_version, regarding.kind
    else:
        api_version, kind = "v1", "Pod"
    reference = {
        "apiVersion": api_version,
        "kind": kind,
        "namespace": regarding.namespace,
        "name": regarding.name,
        "uid": regarding.uid,
    }
    # client-go's reference.GetReference keeps the object's resourceVersion: a pod whose
    # status changed between two failures starts a new Event rather than a series.
    obj = getattr(regarding, "obj", None)
    if isinstance(obj, Mapping):
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            reference["resourceVersion"] = str(version)
    return reference


def _stamp(at: float, fraction: bool) -> str:
    """MicroTime (events.k8s.io's eventTime) or Time (core/v1's timestamps) of epoch seconds."""
    moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if fraction else "%Y-%m-%dT%H:%M:%SZ")


def _parse_stamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _now(fraction: bool) -> str:
    return _stamp(time.time(), fraction)


def truncate_note(note: str) -> str:
    """kube-scheduler's truncateMessage: at most MAX_NOTE bytes, ending in " ..." when cut."""
    raw = note.encode()
    if len(raw) <= MAX_NOTE:
        return note
    suffix = " ..."
    return raw[: MAX_NOTE - len(suffix)].decode(errors="replace") + suffix


def event_name(reference_name: str, unix_nano: int) -> str:
    """client-go's GenerateEventName: ``<name>.<nanoseconds in hex>``, or a UUID if that is no valid name."""
    name = f"{reference_name}.{unix_nano:x}"
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return str(uuid.uuid4())
    return name


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


LRU_ENTRIES = 4096
"""client-go record's maxLruCacheEntries, for each of the correlator's caches."""
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0


class _Lru(OrderedDict[str, Any]):
    """k8s.io/utils/lru: reading or writing an entry makes it the newest; the oldest goes first."""

    def __init__(self, size: int = LRU_ENTRIES) -> None:
        super().__init__()
        self.size = size

    def lookup(self, key: str) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        return None

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


@dataclass
class _Bucket:
    """A passive token bucket (flowcontrol's TryAccept): starts full."""

    tokens: float
    at: float


@dataclass
class Correlated:
    """EventCorrelateResult: what to write (a create, or a patch of the named Event), or nothing."""

    event: dict[str, Any]
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """client-go record's EventCorrelator, for core/v1 Events (the operator's).

    * Ten events with one reason but different messages on one object within ten minutes:
      from the tenth on, one "(combined from similar events): <message>" Event stands for them.
    * An event identical to one written (same source, object, type, reason, message) bumps
      that Event's ``count`` and ``lastTimestamp`` (and message) with a patch.
    * At most 25 events per source and object, then one per 5 minutes; the rest are dropped.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._spam_records = _Lru()
        self._aggregates = _Lru()
        self._observed = _Lru()

    @staticmethod
    def _source(event: dict[str, Any]) -> list[str]:
        source, ref = event.get("source") or {}, event.get("involvedObject") or {}
        return [str(source.get("component", "")), str(source.get("host", "")), str(ref.get("kind", ""))]

    @classmethod
    def event_key(cls, event: dict[str, Any]) -> str:
        ref = event.get("involvedObject") or {}
        parts = [
            *cls._source(event),
            *(str(ref.get(f, "")) for f in ("namespace", "name", "fieldPath", "uid")),
        ]
        parts += [str(ref.get("apiVersion", "")), str(event.get("type", "")), str(event.get("reason", ""))]
        return "".join([*parts, str(event.get("message", ""))])

    @classmethod
    def spam_key(cls, event: dict[str, Any]) -> str:
        ref = event.get("involvedObject") or {}
        parts = [
            *cls._source(event),
            *(str(ref.get(f, "")) for f in ("namespace", "name", "uid", "apiVersion")),
        ]
        return "".join([*parts, str(event.get("type", ""))])

    @classmethod
    def aggregate_key(cls, event: dict[str, Any]) -> str:
        ref = event.get("involvedObject") or {}
        parts = [
            *cls._source(event),
            *(str(ref.get(f, "")) for f in ("namespace", "name", "uid", "apiVersion")),
        ]
        parts += [
            str(event.get(f, "")) for f in ("type", "reason", "reportingComponent", "reportingInstance")
        ]
        return "".join(parts)

    def _aggregate(self, event: dict[str, Any]) -> tuple[dict[str, Any], str]:
        now = self.clock()
        key = self.aggregate_key(event)
        record = self._aggregates.lookup(key)
        if record is None or now - record[1] > AGGREGATE_INTERVAL:
            record = (set(), now)
        messages: set[str] = record[0]
        messages.add(str(event.get("message", "")))
        self._aggregates.put(key, (messages, now))
        if len(messages) < AGGREGATE_MAX_EVENTS:
            return event, self.event_key(event)
        messages.pop()
        ref = event["involvedObject"]
        stamp = _stamp(now, fraction=False)
        combined = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref['name']}.{int(now * 1e9):x}",
                "namespace": event["metadata"]["namespace"],
            },
            "count": 1,
            "firstTimestamp": stamp,
            "involvedObject": ref,
            "lastTimestamp": stamp,
            "message": f"(combined from similar events): {event.get('message', '')}",
            "type": event.get("type"),
            "reason": event.get("reason"),
            "source": event.get("source"),
        }
        return combined, key

    def _observe(self, event: dict[str, Any], key: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        event = {**event, "metadata": dict(event["metadata"])}
        patch = None
        last = self._observed.lookup(key)
        if last is not None and last["count"] > 0:
            event["metadata"]["name"] = last["name"]
            if last["resourceVersion"]:
                event["metadata"]["resourceVersion"] = last["resourceVersion"]
            event["firstTimestamp"] = last["firstTimestamp"]
            event["count"] = last["count"] + 1
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event["message"],
            }
        self._remember(key, event)
        return event, patch

    def _remember(self, key: str, event: dict[str, Any]) -> None:
        self._observed.put(
            key,
            {
                "count": int(event.get("count") or 0),
                "firstTimestamp": event.get("firstTimestamp"),
                "name": event["metadata"]["name"],
                "resourceVersion": event["metadata"].get("resourceVersion", ""),
            },
        )

    def _spam(self, event: dict[str, Any]) -> bool:
        now = self.clock()
        key = self.spam_key(event)
        bucket = self._spam_buckets(key, now)
        bucket.tokens = min(SPAM_BURST, bucket.tokens + (now - bucket.at) * SPAM_QPS)
        bucket.at = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return False
        return True

    def _spam_buckets(self, key: str, now: float) -> _Bucket:
        bucket = self._spam_records.lookup(key)
        if bucket is None:
            bucket = _Bucket(float(SPAM_BURST), now)
        self._spam_records.put(key, bucket)
        return bucket

    def correlate(self, event: dict[str, Any]) -> Correlated:
        """EventCorrelate: aggregate, then count identical events, then drop spam."""
        aggregated, key = self._aggregate(event)
        observed, patch = self._observe(aggregated, key)
        if self._spam(observed):
            return Correlated(observed, skip=True)
        return Correlated(observed, patch)

    def update_state(self, written: dict[str, Any]) -> None:
        """What the server answered becomes the last observation (its name, count, version)."""
        self._remember(self.event_key(written), written)


class EventRecorder:
    def __init__(
        self,
        api: ApiClient,
        *,
        api_version: EventApi = "events.k8s.io/v1",
        queue_length: int = QUEUE_LENGTH,
        senders: int = SENDERS,
        repeat_after: float = 0.0,
        log_events: bool = False,
        clock: Callable[[], float] = time.time,
        retry_sleep: float = RETRY_SLEEP,
        on_dropped: Callable[[DropReason, int], None] | None = None,
    ) -> None:
        self.api = api
        self.api_version = api_version
        self.senders = senders
        self.repeat_after = repeat_after
        """``post`` skips an event identical to one sent less than this many seconds ago."""
        self.log_events = log_events
        """``post`` also logs each event it sends (Warning events as warnings)."""
        self.clock = clock
        """Wall-clock seconds since the epoch (a fake one in tests)."""
        self.retry_sleep = retry_sleep
        self.on_dropped = on_dropped
        """Told of every event not written, with why and how many (the scheduler's metric)."""
        self.hostname = socket.gethostname()
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=queue_length)
        """Events recorded and not yet taken by a sender, in the order recorded."""
        self._sending = 0
        """Events a sender has taken and is writing now (its first try)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._retries: set[asyncio.Task[None]] = set()
        self._sent: dict[tuple[str, str, str, str], float] = {}
        self.cache: dict[EventKey, dict[str, Any]] = {}
        """client-go's eventCache: the last Event written per isomorphism key (events.k8s.io)."""
        self._lock = asyncio.Lock()
        self.correlator = EventCorrelator(clock)
        """core/v1 (``post`` with api_version "v1"): client-go record's aggregation and spam filter."""
        self.dropped: collections.Counter[DropReason] = collections.Counter()
        """Events not written, by reason, since this recorder was made."""
        self._full_logged_at = -math.inf

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
        now = self.clock()
        nanos = time.time_ns() if self.clock is time.time else int(now * 1e9)
        instance = f"{reporter}-{self.hostname}"
        if self.api_version == "v1":
            metadata = {
                "name": event_name(regarding.name, nanos),
                "namespace": regarding.namespace or "default",
            }
            stamp = _stamp(now, fraction=False)
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
        metadata = {
            "name": event_name(regarding.name, nanos),
            "namespace": regarding.namespace or "default",
        }
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": metadata,
            "eventTime": _stamp(now, fraction=True),
            "reportingController": reporter,
            "reportingInstance": instance,
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": note,
            "regarding": reference,
        }

    # -- queued (the scheduler) ---------------------------------------------------------------
    def start(self) -> None:
        """Start the senders of what ``record`` queues, and the timers that write and close series."""
        self._tasks = [
            *(asyncio.create_task(self._send(), name=f"event-sender-{i}") for i in range(self.senders)),
            asyncio.create_task(
                self._every(REFRESH_SERIES, self.refresh_series), name="event-series-refresh"
            ),
            asyncio.create_task(self._every(FINISH_SERIES, self.finish_series), name="event-series-finish"),
        ]

    async def stop(self, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Write what is queued (for at most `drain_seconds`), then stop; count and log what is left.

        Events waiting for a retry are not waited for: their API server did not answer lately.
        """
        if not self._tasks:
            return
        pending = self._queue.qsize() + self._sending
        if pending:
            log.info("stopping: writing %d queued events (for at most %.1f s)", pending, drain_seconds)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), drain_seconds)
        queued, retrying = self._queue.qsize() + self._sending, len(self._retries)
        tasks = [*self._tasks, *self._retries]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if queued + retrying:
            self._drop("shutdown", queued + retrying)
            log.warning(
                "stopping: %d events not written (%d still queued after %.1f s, %d waiting for a retry)",
                queued + retrying,
                queued,
                drain_seconds,
                retrying,
            )

    def record(
        self,
        regarding: ObjectReference | PodReference,
        reporter: str,
        event_type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """Queue an event for sending; never blocks (a full queue drops it, counted and logged)."""
        if event_type not in EVENT_TYPES:
            log.error("unsupported event type %r: event %s not recorded", event_type, reason)
            return
        body = self.event(regarding, reporter, event_type, reason, action, note)
        try:
            self._queue.put_nowait(body)
        except asyncio.QueueFull:
            self._drop("queue_full")
            now = time.monotonic()
            if now - self._full_logged_at >= DROP_LOG_INTERVAL:
                self._full_logged_at = now
                log.warning(
                    "event queue full (%d events waiting, %d being written): dropped %s; "
                    "%d dropped for a full queue so far",
                    self._queue.qsize(),
                    self._sending,
                    _describe(body),
                    self.dropped["queue_full"],
                )

    def scheduled(self, pod: PodReference, scheduler_name: str, node: str) -> None:
        """kube-scheduler's Normal/Scheduled event, once a pod is bound."""
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self.record(pod, scheduler_name, "Normal", "Scheduled", "Binding", note)

    def failed(self, pod: PodReference, scheduler_name: str, message: str) -> None:
        """kube-scheduler's Warning/FailedScheduling event, when a pod fits nowhere (or errors)."""
        self.record(pod, scheduler_name, "Warning", "FailedScheduling", "Scheduling", truncate_note(message))

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
        observed = _stamp(self.clock(), fraction=True)
        series = cached.get("series")
        if series is not None:
            series["count"] += 1
            series["lastObservedTime"] = observed
            return None
        cached["series"] = {"count": 2, "lastObservedTime": observed}
        return _copy(cached)

    async def _send(self) -> None:
        """One sender: take the oldest queued event and write it (its retries go on in the background)."""
        while True:
            body = await self._queue.get()
            self._sending += 1
            try:
                async with self._lock:
                    write = self.observe(body)
                if write is not None:
                    await self._attempt(write)
            except Exception:
                log.exception("unexpected error recording an event")
            finally:
                self._sending -= 1
                self._queue.task_done()

    def _drop(self, reason: DropReason, count: int = 1) -> None:
        self.dropped[reason] += count
        if self.on_dropped is not None:
            self.on_dropped(reason, count)

    async def _attempt(self, event: dict[str, Any]) -> None:
        """client-go's attemptRecording: the first try now, the others in the background."""
        _, retry = await self.write(event)
        if retry:
            task = asyncio.create_task(self._retry(event), name="event-retry")
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)

    async def _retry(self, event: dict[str, Any]) -> None:
        for _ in range(MAX_TRIES - 1):
            await asyncio.sleep(self.retry_sleep * (1 + 0.25 * random.random()))
            _, retry = await self.write(event)
            if not retry:
                return
        self._drop("retry_limit")
        log.error("unable to write event %s (retry limit exceeded!)", _describe(event))

    async def write(self, event: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        """client-go's recordEvent: patch a series (create it if gone), create the rest.

        Returns the Event the server answered with (or None) and whether to try again.
        """
        metadata = event["metadata"]
        series = event.get("series")
        try:
            if series is not None:
                path = resource_path(self.api_version, "events", metadata["namespace"], metadata["name"])
                try:
                    return await self.api.patch(path, {"series": series}, patch_type="strategic"), False
                except ApiError as error:
                    if not error.not_found:
                        raise
            metadata.pop("resourceVersion", None)
            return await self.api.create(
                resource_path(self.api_version, "events", metadata["namespace"]), event
            ), False
        except ApiError as error:
            if error.conflict and error.reason == "AlreadyExists":
                if series is not None:
                    return None, True
                log.debug("server rejected event %s (will not retry!): %s", _describe(event), error)
            else:
                self._drop("rejected")
                log.error("server rejected event %s (will not retry!): %s", _describe(event), error)
            return None, False
        except (ApiUnavailable, OSError) as error:
            log.error("unable to write event %s (may retry after sleeping): %s", _describe(event), error)
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
                    if _parse_stamp(series["lastObservedTime"]) < horizon:
                        _, retry = await self.write(event)
                        if not retry:
                            del self.cache[key]
                elif _parse_stamp(event["eventTime"]) < horizon:
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
        if self.api_version == "v1":
            await self._post_core(self.event(regarding, reporter, event_type, reason, action, note))
            return
        body = self.event(regarding, reporter, event_type, reason, action, note)
        try:
            await self.api.create(
                resource_path(self.api_version, "events", body["metadata"]["namespace"]), body
            )
        except (ApiError, ApiUnavailable, OSError) as error:
            log.warning("could not post event %s on %s: %s", reason, _describe(body), error)

    async def _post_core(self, body: dict[str, Any]) -> None:
        """client-go record's recordToSink/recordEvent: correlate, then patch the count or create."""
        result = self.correlator.correlate(body)
        if result.skip:
            log.debug("event %s dropped by the spam filter", _describe(body))
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
            log.warning("could not post event %s: %s", _describe(event), error)

    def forget(self, uid: str) -> None:
        """Drop the memory of a deleted object's events (see ``repeat_after``)."""
        self._sent = {key: at for key, at in self._sent.items() if key[0] != uid}


def _copy(event: dict[str, Any]) -> dict[str, Any]:
    """A copy deep enough that the cache's later changes do not reach a write under way."""
    copy = dict(event)
    copy["metadata"] = dict(event["metadata"])
    if event.get("series") is not None:
        copy["series"] = dict(event["series"])
    return copy


def _describe(event: dict[str, Any]) -> str:
    regarding = event.get("regarding") or event.get("involvedObject") or {}
    return f"{event.get('reason')} on {regarding.get('namespace')}/{regarding.get('name')}"
