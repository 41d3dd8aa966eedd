"""The queue's hooks for a caller that drives time itself (the replay): pop without waiting, and
when the next waiting pod is due."""

from __future__ import annotations

from tests.unit.scheduler.test_queue import FIT, Clock, FakePod, make_queue

from secondary_scheduler.scheduler.queue import ORDERING_WINDOW


def test_pop_nowait_hands_out_what_pop_would_and_none_where_pop_would_wait() -> None:
    clock = Clock()
    queue = make_queue(clock)
    assert queue.pop_nowait() is None
    queue.add(FakePod("a"))
    item = queue.pop_nowait()
    assert item is not None and item.pod.key == "a" and item.attempts == 1
    assert queue.get("a") is not None  # in flight, as after pop
    assert queue.pop_nowait() is None


def test_pop_nowait_runs_the_idle_callbacks_and_hands_out_what_they_requeue() -> None:
    clock = Clock()
    queue = make_queue(clock)
    queue.add(FakePod("a"))
    item = queue.pop_nowait()
    assert item is not None
    queue.requeue_failed(item, unschedulable=True, rejectors=FIT)
    queue.call_when_idle(lambda: queue.activate(["a"]))
    again = queue.pop_nowait()
    assert again is not None and again.pod.key == "a" and again.attempts == 2


def test_next_wake_time_is_the_earliest_backoff_end_or_periodic_retry() -> None:
    clock = Clock()
    queue = make_queue(clock)
    assert queue.next_wake_time() is None
    for key in ("errored", "unschedulable"):
        queue.add(FakePod(key))
    errored, unschedulable = queue.pop_nowait(), queue.pop_nowait()
    assert errored is not None and unschedulable is not None
    queue.requeue_failed(errored, unschedulable=False)  # an error: a 1 s backoff
    queue.requeue_failed(unschedulable, unschedulable=True, rejectors=FIT)  # waits for an event
    # The backoff's window (its expiry truncated to a whole second) has passed a second later.
    assert queue.next_wake_time() == errored.backoff_until + ORDERING_WINDOW
    clock.now = queue.next_wake_time()
    popped = queue.pop_nowait()
    assert popped is not None and popped.pod.key == "errored"
    queue.done("errored")
    # Left: the unschedulable pod, retried by the periodic flush after 300 s.
    assert queue.next_wake_time() == unschedulable.unschedulable_since + 300
