"""The scheduling queue's activation, which Coscheduling uses (handle.activate) for a gang's siblings."""

from __future__ import annotations

from dataclasses import dataclass

from secondary_scheduler.scheduler.queue import QueuedPod, SchedulingQueue


@dataclass
class FakePod:
    key: str


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def by_key(a: QueuedPod[FakePod], b: QueuedPod[FakePod]) -> bool:
    return a.pod.key < b.pod.key


async def test_activate_moves_waiting_pods_to_active_at_once_as_upstreams_activate() -> None:
    clock = Clock()
    queue: SchedulingQueue[FakePod] = SchedulingQueue(by_key, initial_backoff=5, max_backoff=10, clock=clock)
    for key in ("a", "b", "c"):
        queue.add(FakePod(key))
    a, b, c = [await queue.pop() for _ in range(3)]
    queue.requeue_failed(a, unschedulable=True, rejectors=frozenset({"Coscheduling"}))
    queue.requeue_failed(b, unschedulable=False)  # an error: backoff for 5 s
    assert queue.counts() == {"active": 0, "backoff": 1, "unschedulable": 1, "gated": 0}
    # c is still being scheduled; "gone" is not in the queue at all.
    assert queue.activate(["a", "b", "c", "gone"]) == 2
    # Both failed just now: activation skips what is left of their backoff (kube-scheduler's Activate).
    assert queue.counts() == {"active": 2, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert [(await queue.pop()).pod.key for _ in range(2)] == ["a", "b"]
    # The in-flight pod was activated too: when it fails it backs off instead of waiting for an event.
    queue.requeue_failed(c, unschedulable=True, rejectors=frozenset({"Coscheduling"}))
    assert queue.counts()["backoff"] == 1
