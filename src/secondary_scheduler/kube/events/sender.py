"""The queue and the sender tasks between a recorder and the API server (client-go's broadcaster).

A reporter records from its hot path: ``enqueue`` only queues the event, and sender tasks
(``SENDERS``) write queued events concurrently through the recorder's own client, as
client-go writes each from a goroutine of its own. So an Event follows its binding within a
request's time even under a backlog (a scheduler killed then loses only the few in flight),
and a slow API server delays Events, not bindings. The queue is bounded like client-go's
(``QUEUE_LENGTH``): a full queue drops the new event. Every event not written (queue full,
refused by the server, out of retries, still queued when ``stop`` gave up) is counted by
reason (``dropped``, and ``on_dropped`` for the scheduler's metric) and logged; ``stop``
first writes what is queued, for at most ``DRAIN_SECONDS``.

A write that failed without an answer is tried again, at most ``MAX_TRIES`` times,
``RETRY_SLEEP`` to 1.25 times that apart. What a write is (create, patch a series) is the
recorder's: it subclasses ``EventSender`` with ``deliver`` and ``write``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import random
import time
from collections.abc import Callable
from typing import Any

from secondary_scheduler.kube.events.objects import DropReason, describe

log = logging.getLogger(__name__)

QUEUE_LENGTH = 1000
"""client-go's maxQueuedEvents: events recorded and not yet taken by a sender; more are dropped."""
SENDERS = 64
"""Events written at once at most. client-go starts a goroutine per event (bounded only by its
rate limiter). Measured under a 250-pod backlog on a loaded 2-core machine
(tests/cluster/test_events_keep_up.py), with 64 bindings in flight then, where an Event took
a few hundred ms to be answered: 16 senders fell behind the bindings (the lag grew to 1-1.5 s
over the burst; 115-122 Events still queued at a SIGTERM), 64 kept it flat at about 0.3 s
(p99 0.5-0.7 s), the bindings no slower. A kill -9 under a 600-pod backlog (bindings in flight
held to 16 for the trace) found at most one Event queued, the rest being written: each Event was
queued within 0.1 ms of its binding's answer and taken by a sender 3-8 ms later (p50; max 82 ms),
then waited 100-130 ms (p50) for the API server's answer (docs/reliability.md)."""
DRAIN_SECONDS = 5.0
"""How long ``stop`` (a SIGTERM) goes on writing what is queued before dropping the rest."""
DROP_LOG_INTERVAL = 10.0
"""A full queue logs its drops at most this often (with the count so far), not once per event."""
MAX_TRIES = 12
"""client-go's maxTriesPerEvent."""
RETRY_SLEEP = 10.0
"""client-go's defaultSleepDuration, jittered by up to a quarter more between tries."""


class EventSender:
    """Queued events written by ``senders`` tasks, retried in the background, drops counted."""

    def __init__(
        self,
        *,
        queue_length: int = QUEUE_LENGTH,
        senders: int = SENDERS,
        retry_sleep: float = RETRY_SLEEP,
        on_dropped: Callable[[DropReason, int], None] | None = None,
    ) -> None:
        self.senders = senders
        self.retry_sleep = retry_sleep
        self.on_dropped = on_dropped
        """Told of every event not written, with why and how many (the scheduler's metric)."""
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=queue_length)
        """Events recorded and not yet taken by a sender, in the order recorded."""
        self._sending = 0
        """Events a sender has taken and is writing now (its first try)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._retries: set[asyncio.Task[None]] = set()
        self.dropped: collections.Counter[DropReason] = collections.Counter()
        """Events not written, by reason, since this sender was made."""
        self._full_logged_at = -math.inf

    # -- what a recorder provides -------------------------------------------------------------
    async def deliver(self, event: dict[str, Any]) -> None:
        """What a sender does with one dequeued event (usually: ``attempt`` to write it)."""
        raise NotImplementedError

    async def write(self, event: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        """Write one event; the Event the server answered with (or None) and whether to try again."""
        raise NotImplementedError

    # -- the senders ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the senders of what ``enqueue`` queues."""
        self._tasks += [
            asyncio.create_task(self._send(), name=f"event-sender-{i}") for i in range(self.senders)
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

    def enqueue(self, event: dict[str, Any]) -> None:
        """Queue an event for the senders; never blocks (a full queue drops it, counted and logged)."""
        try:
            self._queue.put_nowait(event)
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
                    describe(event),
                    self.dropped["queue_full"],
                )

    async def _send(self) -> None:
        """One sender: take the oldest queued event and deliver it (its retries go on in the background)."""
        while True:
            event = await self._queue.get()
            self._sending += 1
            try:
                await self.deliver(event)
            except Exception:
                log.exception("unexpected error recording an event")
            finally:
                self._sending -= 1
                self._queue.task_done()

    def _drop(self, reason: DropReason, count: int = 1) -> None:
        self.dropped[reason] += count
        if self.on_dropped is not None:
            self.on_dropped(reason, count)

    # -- retries -------------------------------------------------------------------------------
    async def attempt(self, event: dict[str, Any]) -> None:
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
        log.error("unable to write event %s (retry limit exceeded!)", describe(event))
