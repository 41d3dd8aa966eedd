"""When CPython's cycle collector may stop the scheduler: between bursts of pods, not inside them.

kube-scheduler's Go collector runs beside the scheduling goroutine. CPython's stops the one
thread that schedules, binds and reads the watches, and a full pass walks every tracked object
that is not frozen: the caches hold hundreds of thousands (every pod's and node's JSON), and each
watch event replaces a pod's objects with new ones. Measured at 1,000 nodes, automatic full passes
came every few seconds during a burst of pods and took 15-90 ms each, with pods waiting through
them (at 5,000 nodes, a pass after each load-metrics refresh took about 90 ms). So:

* what exists once the caches have synced is frozen (``gc.freeze``): full passes skip it;
* automatic full passes are off (the oldest generation's threshold out of reach); the young
  generations' passes stay as they are (a millisecond or two);
* the full pass is made here, when the queue has no pod to hand out, at most every
  ``min_interval`` seconds, and after ``max_interval`` whatever the queue holds (so cyclic
  garbage never waits long); what survives a pass is frozen too, so the next one walks only
  what is newer. So passes are frequent and short: a pass's length grows with the time since the
  last one, and when pods arrive one at a time the next pod may arrive during it and wait;
* the first pass ``thaw_interval`` seconds or more after the last thaw unfreezes everything
  first: a frozen object is never collected, and one frozen while in use may have become
  cyclic garbage since.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

NO_AUTOMATIC_FULL_PASSES = 1 << 30
"""The oldest generation's threshold (young-generation passes between full ones): never reached."""


class FullPasses:
    """Makes the cycle collector's full passes itself, when the scheduler is idle."""

    def __init__(
        self,
        when_idle: Callable[[Callable[[], None]], None],
        *,
        min_interval: float = 2.0,
        max_interval: float = 60.0,
        thaw_interval: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``when_idle(callback)`` calls back once the scheduling queue has no pod to hand out."""
        self.when_idle = when_idle
        self.min_interval = min_interval
        self.max_interval = max(max_interval, min_interval)
        self.thaw_interval = thaw_interval
        self.clock = clock
        self._last_thaw = clock()
        self.passes = 0
        self._thresholds: tuple[int, int, int] | None = None

    def settle(self) -> None:
        """Freeze what exists now (the synced caches) and turn automatic full passes off."""
        gc.collect()
        gc.freeze()
        if self._thresholds is None:
            self._thresholds = gc.get_threshold()
            young, middle, _oldest = self._thresholds
            gc.set_threshold(young, middle, NO_AUTOMATIC_FULL_PASSES)

    def restore(self) -> None:
        """Give the collector back its own thresholds (the frozen objects stay frozen)."""
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None

    async def run(self) -> None:
        """A full pass when the queue is next idle after ``min_interval``, or at ``max_interval``."""
        while True:
            await asyncio.sleep(self.min_interval)
            idle = asyncio.Event()
            self.when_idle(idle.set)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(idle.wait(), self.max_interval - self.min_interval)
            self.full_pass()

    def full_pass(self) -> int:
        """Collect every generation, then freeze the survivors; returns the objects collected."""
        started = time.perf_counter()
        self.passes += 1
        thaw = self.clock() - self._last_thaw >= self.thaw_interval
        if thaw:
            self._last_thaw = self.clock()
            gc.unfreeze()
        collected = gc.collect()
        gc.freeze()
        if log.isEnabledFor(logging.DEBUG):
            # Only then: get_freeze_count walks the whole frozen list, millions of objects at
            # 5,000 nodes (a 60 ms stall after every pass when it was counted for nothing).
            log.debug(
                "cycle collector: full pass%s in %.1f ms, %d objects collected, %d frozen",
                " (everything thawed first)" if thaw else "",
                (time.perf_counter() - started) * 1000,
                collected,
                gc.get_freeze_count(),
            )
        return collected
