"""The simulated clock and its agenda: what happens next, in simulated seconds from the trace's start.

Nothing here waits: the engine pops the next event, moves the clock to its time and acts.
Plugins and the queue read the same clock through ``wall`` (Unix seconds, what metrics windows
and bind stamps are in) and ``monotonic`` (what the scheduling queue's backoffs are in).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

DEFAULT_EPOCH = 1_700_000_000.0
"""The Unix time of t=0 for a trace that starts at 0: metrics timestamps of 0 mean "unset"."""


class SimClock:
    def __init__(self, epoch: float = DEFAULT_EPOCH) -> None:
        """``epoch``: the Unix time of t=0 (the trace header's ``start`` when it has one)."""
        self.epoch = epoch if epoch > 0 else DEFAULT_EPOCH
        self.now = 0.0
        """Simulated seconds since the trace's start."""

    def advance(self, to: float) -> None:
        if to < self.now:
            raise ValueError(f"the simulated clock cannot go back from {self.now} to {to}")
        self.now = to

    def wall(self) -> float:
        """Unix seconds now: the handle's wall clock."""
        return self.epoch + self.now

    def monotonic(self) -> float:
        """Seconds now on a monotonic scale: the queue's and the handle's clock."""
        return self.now


class Kind(IntEnum):
    """What an event is; at equal times, lower kinds go first (a departure frees room before an
    arrival at the same instant asks for it, usage is sampled after both, and the queue wakes
    last, after a Permit timeout has sent its pods back)."""

    DEPARTURE = 0
    ARRIVAL = 1
    USAGE = 2
    SAMPLE = 3
    MEASURE = 4
    TIMER = 5
    QUEUE = 6


@dataclass(order=True, frozen=True)
class Event:
    time: float
    kind: Kind
    order: int
    payload: Any = field(compare=False, default=None)


class Agenda:
    """The events to come, earliest first (ties: by kind, then in the order they were added)."""

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, time: float, kind: Kind, payload: Any = None) -> None:
        heapq.heappush(self._heap, Event(time, kind, next(self._order), payload))

    def peek_time(self) -> float | None:
        return self._heap[0].time if self._heap else None

    def peek_kind(self) -> Kind | None:
        return self._heap[0].kind if self._heap else None

    def pop(self) -> Event:
        return heapq.heappop(self._heap)


class Timer:
    """A callback the agenda runs at its time (a ``TIMER`` event's payload), unless cancelled first."""

    __slots__ = ("args", "callback", "cancelled")

    def __init__(self, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.callback(*self.args)
