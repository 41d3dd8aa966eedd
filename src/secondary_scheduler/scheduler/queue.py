"""The scheduling queue: active, backoff and unschedulable pods, as kube-scheduler 1.34 keeps them.

- active: a heap ordered by the profile's QueueSort plugin; `pop()` takes its head.
- backoff: pods that failed, each until its backoff ends. As upstream's ``backoffQueue``
  it is two heaps: pods some plugin rejected (``podBackoffQ``, ordered by backoff expiry,
  then as the active queue orders them) and pods that failed with an error, i.e. without
  any rejecting plugin (``podErrorBackoffQ``, by expiry only). A pod's backoff is
  ``initial * 2^(n-1)`` capped at the maximum, where n counts its unschedulable failures, or
  its consecutive errors while the last attempts erred (``UnschedulableCount`` and
  ``ConsecutiveErrorsCount``: pods popped but not failed, e.g. bound or retried on a move,
  do not lengthen it). The expiry is truncated to a one-second ordering window and a pod
  is still backing off while its expiry is not before the current window (KEP-5142): so
  it comes out at the start of a window, with the rest of that window's pods.
- pop from backoff (SchedulerPopFromBackoffQ, beta and on by default since 1.33): when the
  active queue is empty, `pop()` takes the head of the rejected pods' backoff heap at once,
  backing off or not: an idle scheduler does not sit out backoffs. Pods that failed with
  an error always wait out theirs.
- unschedulable: pods nothing fits; a cluster event that could help moves them back (the
  caller's ``worth`` predicate applies the plugins' queueing hints to each pod, see
  ``framework.events``): to backoff while backing off, else to active. So does a periodic
  flush after `unschedulable_timeout`, so that no pod waits forever on a missed event.
- activate (``handle.activate``, upstream's ``Activate``): a plugin moves pods from
  unschedulable or backoff straight to active, skipping what is left of their backoff;
  a pod being scheduled gets a forced event instead (it backs off, then retries, when it
  fails).

An event that arrives while a pod is being scheduled is remembered with that pod; when the
pod fails, it goes to backoff rather than unschedulable only if one of those events could
help it (judged by its new rejectors, as kube-scheduler's in-flight events): it may have
failed on state that has changed since. A pod without rejectors (an error) always backs off.

`call_when_idle` runs callbacks the next time `pop()` has nothing to hand out (active and
rejected backoff both empty): the runtime's "later, once the scheduling loop has caught
up" (Coscheduling's late Unreserve, see ``plugins.coscheduling.plugin``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar


class Keyed(Protocol):
    @property
    def key(self) -> str: ...


P = TypeVar("P", bound=Keyed)

ORDERING_WINDOW = 1.0
"""backoffQOrderingWindowDuration: backoff expiries are truncated to whole windows (seconds)."""


@dataclass
class QueuedPod(Generic[P]):
    """A pod in the queue, with what backoff and ordering need to know about it."""

    pod: P
    timestamp: float = field(default_factory=time.monotonic)  # when it (re)entered the queue
    initial_timestamp: float = field(default_factory=time.monotonic)
    attempts: int = 0
    """How many times it was popped (for the attempts metrics)."""
    unschedulable_count: int = 0
    """Failures with a rejecting plugin (upstream's UnschedulableCount): they set the backoff."""
    consecutive_errors: int = 0
    """Failures in a row without one (ConsecutiveErrorsCount); when nonzero they set the backoff."""
    backoff_until: float = 0.0
    """The backoff's expiry, truncated to the ordering window (0: no backoff)."""
    unschedulable_since: float = 0.0
    cycle: int = 0  # the scheduling cycle that last popped it
    rejectors: frozenset[str] = frozenset()
    """The plugins that found it unschedulable last time: only their events can help it."""
    events_in_flight: list[Callable[[QueuedPod[P]], bool]] = field(default_factory=list)
    """Events that came while it was being scheduled (their ``worth`` checks), for requeue_failed."""
    activated_in_flight: bool = False
    """A plugin activated it while it was being scheduled (upstream's ForceActivate event)."""
    gated: bool = False
    """A PreEnqueue plugin kept it out when it was last to be requeued: it waits as unschedulable."""


def _always(item: object) -> bool:
    return True


class _HeapEntry(Generic[P]):
    """A heap slot; a deleted or moved pod's entry is marked removed and skipped when it surfaces."""

    __slots__ = ("by_expiry", "item", "less", "order", "removed")

    def __init__(
        self,
        item: QueuedPod[P],
        less: Callable[[QueuedPod[P], QueuedPod[P]], bool] | None,
        order: int,
        by_expiry: bool = False,
    ) -> None:
        self.item = item
        self.less = less
        self.order = order
        self.by_expiry = by_expiry
        self.removed = False

    def __lt__(self, other: _HeapEntry[P]) -> bool:
        if self.by_expiry and self.item.backoff_until != other.item.backoff_until:
            return self.item.backoff_until < other.item.backoff_until
        if self.less is not None:
            if self.less(self.item, other.item):
                return True
            if self.less(other.item, self.item):
                return False
        return self.order < other.order


class _Heap(Generic[P]):
    """Pods by key, popped in ``_HeapEntry`` order; removal is lazy."""

    def __init__(
        self,
        less: Callable[[QueuedPod[P], QueuedPod[P]], bool] | None,
        order: itertools.count[int],
        by_expiry: bool,
    ) -> None:
        self._less = less
        self._order = order
        self._by_expiry = by_expiry
        self._heap: list[_HeapEntry[P]] = []
        self.by_key: dict[str, _HeapEntry[P]] = {}

    def __len__(self) -> int:
        return len(self.by_key)

    def push(self, item: QueuedPod[P]) -> None:
        self.remove(item.pod.key)
        entry = _HeapEntry(item, self._less, next(self._order), self._by_expiry)
        self.by_key[item.pod.key] = entry
        heapq.heappush(self._heap, entry)

    def remove(self, key: str) -> QueuedPod[P] | None:
        entry = self.by_key.pop(key, None)
        if entry is None:
            return None
        entry.removed = True
        return entry.item

    def get(self, key: str) -> QueuedPod[P] | None:
        entry = self.by_key.get(key)
        return entry.item if entry is not None else None

    def peek(self) -> QueuedPod[P] | None:
        while self._heap and self._heap[0].removed:
            heapq.heappop(self._heap)
        return self._heap[0].item if self._heap else None

    def pop(self) -> QueuedPod[P] | None:
        item = self.peek()
        if item is not None:
            heapq.heappop(self._heap)
            del self.by_key[item.pod.key]
        return item

    def items(self) -> list[QueuedPod[P]]:
        return [entry.item for entry in self.by_key.values()]


class SchedulingQueue(Generic[P]):
    def __init__(
        self,
        less: Callable[[QueuedPod[P], QueuedPod[P]], bool],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_timeout: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        gate: Callable[[P], bool] | None = None,
    ) -> None:
        """``gate``: whether PreEnqueue keeps a pod out of active and backoff now (e.g. its
        preemption is still evicting); asked whenever a waiting pod would move back in."""
        self.less = less
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self.clock = clock
        self.gate = gate
        order = itertools.count()
        self._active: _Heap[P] = _Heap(less, order, by_expiry=False)
        self._backoff: _Heap[P] = _Heap(less, order, by_expiry=True)
        """podBackoffQ: rejected pods, by expiry window then QueueSort; popped when active is empty."""
        self._error_backoff: _Heap[P] = _Heap(None, order, by_expiry=True)
        """podErrorBackoffQ: pods that failed with an error, by expiry; they always wait it out."""
        self._unschedulable: dict[str, QueuedPod[P]] = {}
        self._held: dict[str, QueuedPod[P]] = {}
        """Pods PreEnqueue kept out when they arrived (scheduling gates, claims not created yet),
        each rejected by the plugin that gated it (upstream's GatingPlugin): in no pool until an
        update lets them in (``add``), a cluster event that plugin's hints say may help finds
        PreEnqueue passing (``move_all_to_active_or_backoff``), or they go (``delete``)."""
        self._in_flight: dict[str, QueuedPod[P]] = {}
        self._idle: list[Callable[[], None]] = []
        self._wakeup = asyncio.Event()
        self.scheduling_cycle = 0

    # -- sizes (for scheduler_pending_pods) --------------------------------------------
    def counts(self) -> dict[str, int]:
        gated = sum(item.gated for item in self._unschedulable.values())
        return {
            "active": len(self._active),
            "backoff": len(self._backoff) + len(self._error_backoff),
            "unschedulable": len(self._unschedulable) - gated,
            "gated": gated + len(self._held),
        }

    def get(self, key: str) -> P | None:
        """The queued (or in-flight) version of a pod, if any."""
        item = self._find(key)
        if item is None:
            item = self._in_flight.get(key)
        return item.pod if item is not None else None

    def _find(self, key: str) -> QueuedPod[P] | None:
        for heap in (self._active, self._backoff, self._error_backoff):
            item = heap.get(key)
            if item is not None:
                return item
        return self._unschedulable.get(key)

    def __contains__(self, key: str) -> bool:
        return self._find(key) is not None

    # -- backoff (upstream's backoffQueue) -------------------------------------------------
    def backoff_duration(self, count: int) -> float:
        """``initial * 2^(count-1)``, capped at the maximum (calculateBackoffDuration); 0 for no failure."""
        if count <= 0:
            return 0.0
        return min(self.initial_backoff * (2 ** (count - 1)), self.max_backoff)

    @staticmethod
    def _window(moment: float) -> float:
        return math.floor(moment / ORDERING_WINDOW) * ORDERING_WINDOW

    def _expiry(self, item: QueuedPod[P]) -> float:
        """getBackoffTime: the failure time plus the backoff, truncated to its window; 0: none."""
        if self.max_backoff == 0:
            return 0.0
        count = item.consecutive_errors or item.unschedulable_count
        if count == 0:
            return 0.0
        return self._window(item.timestamp + self.backoff_duration(count))

    def backing_off(self, item: QueuedPod[P]) -> bool:
        """isPodBackingoff: its expiry is not before the current window (no expiry: never)."""
        return item.backoff_until > 0 and item.backoff_until >= self._window(self.clock())

    # -- adding, updating, deleting ----------------------------------------------------
    def _push_active(self, item: QueuedPod[P]) -> None:
        self._backoff.remove(item.pod.key)
        self._error_backoff.remove(item.pod.key)
        self._unschedulable.pop(item.pod.key, None)
        self._active.push(item)
        self._wakeup.set()

    def _push_backoff(self, item: QueuedPod[P]) -> None:
        """To the rejected pods' heap, or the errored pods' one when no plugin rejected it."""
        key = item.pod.key
        self._unschedulable.pop(key, None)
        if item.rejectors:
            self._error_backoff.remove(key)
            self._backoff.push(item)
        else:
            self._backoff.remove(key)
            self._error_backoff.push(item)
        self._wakeup.set()

    def add(self, pod: P) -> None:
        """A new pod for us (or a held one PreEnqueue now lets in): straight to active."""
        key = pod.key
        self._held.pop(key, None)
        if key in self or key in self._in_flight:
            self.update(pod)
            return
        self._push_active(QueuedPod(pod, timestamp=self.clock(), initial_timestamp=self.clock()))

    def update(self, pod: P) -> None:
        """A pod changed: keep its place; an unschedulable pod gets another try (it may fit now)."""
        key = pod.key
        unschedulable = self._unschedulable.pop(key, None)
        if unschedulable is not None:
            unschedulable.pod = pod
            self._requeue(unschedulable)
            return
        item = self._find(key) or self._in_flight.get(key)
        if item is not None:
            item.pod = pod

    def refresh(self, pod: P) -> None:
        """A waiting pod's newer object that changes nothing for scheduling (its status): keep its
        place, but events and binding see the new object (kube-scheduler's pInfo.Update)."""
        item = self._find(pod.key)
        if item is not None:
            item.pod = pod

    def delete(self, key: str) -> None:
        self._active.remove(key)
        self._backoff.remove(key)
        self._error_backoff.remove(key)
        self._unschedulable.pop(key, None)
        self._in_flight.pop(key, None)
        self._held.pop(key, None)

    def hold(self, pod: P, gating: str = "") -> None:
        """A pod PreEnqueue keeps out as it arrives: out of every pool, held until an update
        brings it back through ``add``, or an event ``gating``'s hints accept lets PreEnqueue
        pass (counted as gated meanwhile)."""
        self.delete(pod.key)
        rejectors = frozenset({gating}) if gating else frozenset()
        self._held[pod.key] = QueuedPod(pod, rejectors=rejectors)

    def held(self) -> list[str]:
        """The keys of the pods ``hold`` keeps out."""
        return list(self._held)

    # -- the scheduling loop's side ----------------------------------------------------
    async def pop(self) -> QueuedPod[P]:
        """The active queue's head; with none, the rejected pods' backoff head; else wait.

        Before waiting, the callbacks queued by `call_when_idle` run (they may requeue pods).
        """
        while True:
            item = self.pop_nowait()
            if item is not None:
                return item
            self._wakeup.clear()
            # Not wait_for: on Python 3.11 it wraps the wait in a task of its own, and a pod
            # added would reach this loop two event-loop turns later, behind other work.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._next_wake()):
                    await self._wakeup.wait()

    def pop_nowait(self) -> QueuedPod[P] | None:
        """What `pop` hands out now, or None where `pop` would wait (for a caller that drives time
        itself, the replay: it pops until None, then wakes the queue at `next_wake_time`).

        As `pop`, the callbacks queued by `call_when_idle` run when there is no pod to hand out,
        and a pod they requeue is handed out.
        """
        while True:
            self.flush()
            item = self._active.pop() or self._backoff.pop()
            if item is not None:
                self.scheduling_cycle += 1
                item.cycle = self.scheduling_cycle
                item.attempts += 1
                self._in_flight[item.pod.key] = item
                return item
            if not self._idle:
                return None
            callbacks, self._idle = self._idle, []
            for callback in callbacks:
                callback()

    def call_when_idle(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once `pop()` has no pod to hand out (soon if it is waiting now)."""
        self._idle.append(callback)
        self._wakeup.set()

    def done(self, key: str) -> None:
        """The pod was scheduled (or is gone): forget it."""
        self._in_flight.pop(key, None)

    def requeue_failed(
        self, item: QueuedPod[P], unschedulable: bool, rejectors: frozenset[str] = frozenset()
    ) -> None:
        """After a failed attempt (upstream's AddUnschedulableIfNotPresent).

        A rejection (``rejectors`` named) counts as unschedulable and waits for an event, unless
        one that could help it came meanwhile; an error (no rejector, or ``unschedulable``
        False) counts as an error and backs off.
        """
        key = item.pod.key
        if self._in_flight.pop(key, None) is None:
            return  # deleted while we were scheduling it
        errored = not unschedulable or not rejectors
        item.rejectors = frozenset() if errored else rejectors
        if errored:
            item.consecutive_errors += 1
        else:
            item.unschedulable_count += 1
            item.consecutive_errors = 0
        item.timestamp = self.clock()
        item.backoff_until = self._expiry(item)
        missed = item.activated_in_flight or any(worth(item) for worth in item.events_in_flight)
        item.events_in_flight = []
        item.activated_in_flight = False
        if errored or missed:
            self._requeue(item)
        else:
            item.unschedulable_since = self.clock()
            self._unschedulable[key] = item

    def activate(self, keys: Iterable[str]) -> int:
        """Move these pods to active now, from unschedulable or backoff (upstream's Activate).

        What is left of their backoff is skipped: the plugin knows they should be tried now
        (Coscheduling: the gang's first pod was placed, its siblings follow it). A pod being
        scheduled gets a forced event: if it fails, it backs off rather than waiting for
        another event. Returns how many moved.
        """
        moved = 0
        for key in keys:
            item = (
                self._unschedulable.pop(key, None)
                or self._backoff.remove(key)
                or self._error_backoff.remove(key)
            )
            if item is not None:
                if not self._kept_out(item):
                    self._push_active(item)
                    moved += 1
            elif key in self._in_flight:
                self._in_flight[key].activated_in_flight = True
        return moved

    def drop_events_in_flight(self, key: str) -> None:
        """Forget the cluster events that came while this in-flight pod was scheduled (not activations).

        For a pod rejected while it waited at Permit. kube-scheduler would still weigh the
        events of the whole wait, and with a Permit plugin that registers no events (so every
        event may help, as upstream treats it) the pod would back off; popped from backoff by
        the order of expiries, its short backoff would put it before the pods that its freed
        room was meant for, whose backoffs have grown on each retry, so a group that keeps
        timing out could take its room back every time (tests/cluster/test_permit.py). The
        pod passed Filter and had room: what failed it was a Permit plugin's verdict, which no
        event during the wait explains. So it waits as unschedulable for a later event (the
        freed room's taker being bound is one), as upstream intends for the pod whose own room
        is freed (handleBindingCycleError defers that move to keep the pod out of backoff).
        """
        item = self._in_flight.get(key)
        if item is not None:
            item.events_in_flight = []

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
        return len(moving) + self._release_held(worth)

    def _release_held(self, worth: Callable[[QueuedPod[P]], bool] | None) -> int:
        """Held pods an event may help (by their gating plugin's hints) whose PreEnqueue now
        passes go to active: upstream keeps gated pods among the unschedulable ones, moved by
        the events of the plugin that gated them (a claim created after its pod, say)."""
        gate = self.gate
        if gate is None or not self._held:
            return 0
        released = [
            item.pod for item in self._held.values() if (worth is None or worth(item)) and not gate(item.pod)
        ]
        for pod in released:
            self.add(pod)
        return len(released)

    def _requeue(self, item: QueuedPod[P]) -> None:
        """requeuePodWithQueueingStrategy (queueAfterBackoff): backoff while backing off, else active."""
        if self._kept_out(item):
            return
        if self.backing_off(item):
            self._push_backoff(item)
        else:
            item.timestamp = self.clock()
            self._push_active(item)

    def _kept_out(self, item: QueuedPod[P]) -> bool:
        """PreEnqueue on the way back in (moveToActiveQ): a gated pod waits as unschedulable, and
        the next event that may help it asks again."""
        item.gated = self.gate is not None and self.gate(item.pod)
        if item.gated:
            item.unschedulable_since = self.clock()
            self._unschedulable[item.pod.key] = item
        return item.gated

    def flush(self) -> None:
        """Move pods whose backoff ended to active, and long-unschedulable pods back in."""
        # No PreEnqueue here: a pod is gated only once it failed in flight (its preemption
        # started in its own cycle), and a gated pod waits as unschedulable, never in backoff.
        for heap in (self._backoff, self._error_backoff):
            while (head := heap.peek()) is not None and not self.backing_off(head):
                heap.pop()
                head.timestamp = self.clock()
                self._push_active(head)
        now = self.clock()
        stale = [
            key
            for key, item in self._unschedulable.items()
            if now - item.unschedulable_since >= self.unschedulable_timeout
        ]
        for key in stale:
            self._requeue(self._unschedulable.pop(key))

    def next_wake_time(self) -> float | None:
        """When (on the queue's clock) a waiting pod is next due: a backoff ends (its window has
        passed) or an unschedulable pod's periodic flush comes; None when no pod waits."""
        deadlines = [
            head.backoff_until + ORDERING_WINDOW
            for heap in (self._error_backoff, self._backoff)
            if (head := heap.peek()) is not None
        ]
        if self._unschedulable:
            since = min(item.unschedulable_since for item in self._unschedulable.values())
            deadlines.append(since + self.unschedulable_timeout)
        return min(deadlines) if deadlines else None

    def _next_wake(self) -> float:
        """Seconds `pop` may wait before a waiting pod is due (1 s when none waits)."""
        wake = self.next_wake_time()
        return 1.0 if wake is None else max(0.01, wake - self.clock())
