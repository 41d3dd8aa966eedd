"""client-go record's EventCorrelator (``events_cache.go``), for core/v1 Events: aggregation and spam filter.

* Ten events with one reason but different messages on one object within ten minutes:
  from the tenth on, one "(combined from similar events): <message>" Event stands for them.
* An event identical to one written (same source, object, type, reason, message) bumps
  that Event's ``count`` and ``lastTimestamp`` (and message) with a patch.
* At most 25 events per source and object, then one per 5 minutes; the rest are dropped.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.kube.events.objects import stamp

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
    """client-go record's EventCorrelator: what to write for each core/v1 event, if anything."""

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
        at = stamp(now, fraction=False)
        combined = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref['name']}.{int(now * 1e9):x}",
                "namespace": event["metadata"]["namespace"],
            },
            "count": 1,
            "firstTimestamp": at,
            "involvedObject": ref,
            "lastTimestamp": at,
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
