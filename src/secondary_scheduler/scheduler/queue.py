"""The scheduling queue: active, backoff and unschedulable pods, as kube-scheduler keeps them.

- active: a heap ordered by the profile's QueueSort plugin; `pop()` waits on it.
- backoff: pods that failed, each until its delay (initial * 2^(attempts-1), capped) ends.
- unschedulable: pods nothing fits; a cluster event that could help moves them back (the
  caller's ``worth`` predicate applies the plugins' queueing hints to each pod, see
  ``framework.events``), and so does a periodic flush after `unschedulable_timeout`, so
  that no pod waits forever on a missed event.

An event that arrives while a pod is being scheduled is remembered with that pod; when the
pod fails, it goes to backoff rather than unschedulable only if one of those events could
help it (judged by its new rejectors, as kube-scheduler's in-flight events): it may have
failed on state that has changed since.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar


class Keyed(Protocol):
    @property
    def key(self) -> str: ...


P = TypeVar("P", bound=Keyed)


@dataclass
class QueuedPod(Generic[P]):
    """A pod in the queue, with what backoff and ordering need to know about it."""

    pod: P
    timestamp: float = field(default_factory=time.monotonic)  # when it (re)entered the queue
    initial_timestamp: float = field(default_factory=time.monotonic)
    attempts: int = 0
    backoff_until: float = 0.0
    unschedulable_since: float = 0.0
    cycle: int = 0  # the scheduling cycle that last popped it
    rejectors: frozenset[str] = frozenset()
    """The plugins that found it unschedulable last time: only their events can help it."""
    events_in_flight: list[Callable[[QueuedPod[P]], bool]] = field(default_factory=list)
    """Events that came while it was being scheduled (their ``worth`` checks), for requeue_failed."""


def _always(item: object) -> bool:
    return True


class _HeapEntry(Generic[P]):
    __slots__ = ("item", "less", "order", "removed")

    def __init__(
        self, item: QueuedPod[P], less: Callable[[QueuedPod[P], QueuedPod[P]], bool], order: int
    ) -> None:
        self.item = item
        self.less = less
        self.order = order
        self.removed = False

    def __lt__(self, other: _HeapEntry[P]) -> bool:
        if self.less(self.item, other.item):
            return True
        if self.less(other.item, self.item):
            return False
        return self.order < other.order


class SchedulingQueue(Generic[P]):
    def __init__(
        self,
        less: Callable[[QueuedPod[P], QueuedPod[P]], bool],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_timeout: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.less = less
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self.clock = clock
        self._active: list[_HeapEntry[P]] = []
        self._active_by_key: dict[str, _HeapEntry[P]] = {}
        self._backoff: dict[str, QueuedPod[P]] = {}
        self._unschedulable: dict[str, QueuedPod[P]] = {}
        self._in_flight: dict[str, QueuedPod[P]] = {}
        self._order = itertools.count()
        self._wakeup = asyncio.Event()
        self.scheduling_cycle = 0

    # -- sizes (for scheduler_pending_pods) --------------------------------------------
    def counts(self) -> dict[str, int]:
        return {
            "active": len(self._active_by_key),
            "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable),
        }

    def get(self, key: str) -> P | None:
        """The queued (or in-flight) version of a pod, if any."""
        entry = self._active_by_key.get(key)
        if entry is not None:
            return entry.item.pod
        for items in (self._backoff, self._unschedulable, self._in_flight):
            item = items.get(key)
            if item is not None:
                return item.pod
        return None

    def __contains__(self, key: str) -> bool:
        return key in self._active_by_key or key in self._backoff or key in self._unschedulable

    # -- adding, updating, deleting ----------------------------------------------------
    def _push_active(self, item: QueuedPod[P]) -> None:
        entry = _HeapEntry(item, self.less, next(self._order))
        self._active_by_key[item.pod.key] = entry
        heapq.heappush(self._active, entry)
        self._wakeup.set()

    def add(self, pod: P) -> None:
        """A new pod for us: straight to active."""
        key = pod.key
        if key in self or key in self._in_flight:
            self.update(pod)
            return
        self._push_active(QueuedPod(pod, timestamp=self.clock(), initial_timestamp=self.clock()))

    def update(self, pod: P) -> None:
        """A pod changed: keep its place; an unschedulable pod gets another try (it may fit now)."""
        key = pod.key
        if key in self._active_by_key:
            self._active_by_key[key].item.pod = pod
        elif key in self._backoff:
            self._backoff[key].pod = pod
        elif key in self._unschedulable:
            item = self._unschedulable.pop(key)
            item.pod = pod
            self._requeue(item)
        elif key in self._in_flight:
            self._in_flight[key].pod = pod

    def delete(self, key: str) -> None:
        entry = self._active_by_key.pop(key, None)
        if entry is not None:
            entry.removed = True
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)
        self._in_flight.pop(key, None)

    # -- the scheduling loop's side ----------------------------------------------------
    async def pop(self) -> QueuedPod[P]:
        while True:
            self.flush()
            while self._active:
                entry = heapq.heappop(self._active)
                if entry.removed:
                    continue
                del self._active_by_key[entry.item.pod.key]
                self.scheduling_cycle += 1
                entry.item.cycle = self.scheduling_cycle
                entry.item.attempts += 1
                self._in_flight[entry.item.pod.key] = entry.item
                return entry.item
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=self._next_wake())

    def done(self, key: str) -> None:
        """The pod was scheduled (or is gone): forget it."""
        self._in_flight.pop(key, None)

    def requeue_failed(
        self, item: QueuedPod[P], unschedulable: bool, rejectors: frozenset[str] = frozenset()
    ) -> None:
        """After a failed attempt: unschedulable waits for an event, an error backs off."""
        key = item.pod.key
        if self._in_flight.pop(key, None) is None:
            return  # deleted while we were scheduling it
        item.rejectors = rejectors
        missed = any(worth(item) for worth in item.events_in_flight)
        item.events_in_flight = []
        item.timestamp = self.clock()
        item.backoff_until = self.clock() + self.backoff_duration(item.attempts)
        if unschedulable and not missed:
            item.unschedulable_since = self.clock()
            self._unschedulable[key] = item
        else:
            self._backoff[key] = item
            self._wakeup.set()

    def backoff_duration(self, attempts: int) -> float:
        duration = self.initial_backoff * (2 ** max(0, attempts - 1))
        return min(duration, self.max_backoff)

    def activate(self, keys: Iterable[str]) -> int:
        """Move these pods out of unschedulable (a plugin asks for them: a gang's siblings).

        Unlike kube-scheduler's Activate, a pod still backing off from a failure waits out its
        backoff first, as after any event. Upstream skips it, and a gang that cannot fit then
        retries in a loop whose pace depends on how soon rejected members give their room back;
        here the bindings give it back before the next cycle, so that loop would spin every
        few milliseconds and starve other pods (Coscheduling with podGroupBackoffSeconds 0).
        Backing off makes it settle at upstream's pace of about a round a second, then slower.
        A pod being scheduled goes to backoff, not unschedulable, if it fails. Returns how many
        moved.
        """
        moved = 0
        for key in keys:
            item = self._unschedulable.pop(key, None) or self._backoff.pop(key, None)
            if item is not None:
                self._requeue(item)
                moved += 1
            elif key in self._in_flight:
                self._in_flight[key].events_in_flight.append(_always)
        return moved

    # -- events --------------------------------------------------------------------------
    def move_all_to_active_or_backoff(
        self, reason: str = "", worth: Callable[[QueuedPod[P]], bool] | None = None
    ) -> int:
        """A cluster event that may make unschedulable pods fit: give them another try.

        ``worth`` picks the pods the event can help (all when None). A pod being scheduled
        right now will go to backoff rather than wait, in case it failed on the old state.
        Returns how many pods moved.
        """
        for flying in self._in_flight.values():
            flying.events_in_flight.append(worth or _always)
        moving = [item for item in self._unschedulable.values() if worth is None or worth(item)]
        for item in moving:
            del self._unschedulable[item.pod.key]
            self._requeue(item)
        return len(moving)

    def _requeue(self, item: QueuedPod[P]) -> None:
        if item.backoff_until > self.clock():
            self._backoff[item.pod.key] = item
            self._wakeup.set()
        else:
            item.timestamp = self.clock()
            self._push_active(item)

    def flush(self) -> None:
        """Move pods whose backoff ended to active, and long-unschedulable pods back in."""
        now = self.clock()
        for key in [key for key, item in self._backoff.items() if item.backoff_until <= now]:
            item = self._backoff.pop(key)
            item.timestamp = now
            self._push_active(item)
        stale = [
            key
            for key, item in self._unschedulable.items()
            if now - item.unschedulable_since >= self.unschedulable_timeout
        ]
        for key in stale:
            self._requeue(self._unschedulable.pop(key))

    def _next_wake(self) -> float:
        now = self.clock()
        deadlines = [item.backoff_until for item in self._backoff.values()]
        deadlines += [
            item.unschedulable_since + self.unschedulable_timeout for item in self._unschedulable.values()
        ]
        return max(0.01, min(deadlines) - now) if deadlines else 1.0
