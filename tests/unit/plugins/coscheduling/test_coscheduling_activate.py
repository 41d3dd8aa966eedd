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


async def test_activate_moves_unschedulable_pods_on_once_their_backoff_ends() -> None:
    clock = Clock()
    queue: SchedulingQueue[FakePod] = SchedulingQueue(by_key, initial_backoff=5, max_backoff=10, clock=clock)
    for key in ("a", "b", "c"):
        queue.add(FakePod(key))
    a, b, c = [await queue.pop() for _ in range(3)]
    queue.requeue_failed(a, unschedulable=True)
    queue.requeue_failed(b, unschedulable=False)  # an error: backoff for 5 s
    assert queue.counts() == {"active": 0, "backoff": 1, "unschedulable": 1}
    # c is still being scheduled; "gone" is not in the queue at all.
    assert queue.activate(["a", "b", "c", "gone"]) == 2
    # Both failed just now: they wait out their backoff (a gang that cannot fit must not spin).
    assert queue.counts() == {"active": 0, "backoff": 2, "unschedulable": 0}
    clock.now += 5
    assert [(await queue.pop()).pod.key for _ in range(2)] == ["a", "b"]
    # Activated long after its failure, a pod goes to active at once.
    queue.requeue_failed(a, unschedulable=True)
    clock.now += 60
    assert queue.activate(["a"]) == 1
    assert queue.counts()["active"] == 1
    assert (await queue.pop()).pod.key == "a"
    # The in-flight pod was activated too: when it fails it backs off instead of waiting for an event.
    queue.requeue_failed(c, unschedulable=True)
    assert queue.counts()["backoff"] == 1
