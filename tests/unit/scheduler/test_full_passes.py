"""FullPasses: the cycle collector's full passes between bursts, survivors frozen, thawed now and then."""

from __future__ import annotations

import asyncio
import gc
import logging
import weakref
from collections.abc import Callable, Iterator

import pytest

from secondary_scheduler.scheduler.garbage import NO_AUTOMATIC_FULL_PASSES, FullPasses


class Cycle:
    """An object in a reference cycle: only the cycle collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def collector_state() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()


def cyclic_garbage_alive() -> weakref.ref[Cycle]:
    """A cycle that is garbage, not yet collected (its weak reference tells whether it is)."""
    garbage = Cycle()
    reference = weakref.ref(garbage)
    del garbage
    return reference


def test_settle_freezes_the_caches_and_turns_automatic_full_passes_off() -> None:
    passes = FullPasses(lambda callback: None)
    young, middle, oldest = gc.get_threshold()
    passes.settle()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (young, middle, NO_AUTOMATIC_FULL_PASSES)
    passes.restore()
    assert gc.get_threshold() == (young, middle, oldest)


def test_a_full_pass_collects_cyclic_garbage_and_freezes_what_survives() -> None:
    passes = FullPasses(lambda callback: None)
    passes.settle()
    kept = Cycle()
    garbage = cyclic_garbage_alive()
    frozen_before = gc.get_freeze_count()
    assert passes.full_pass() > 0
    assert garbage() is None
    assert gc.get_freeze_count() > frozen_before  # ``kept`` among them
    assert kept.me is kept


def test_garbage_made_of_frozen_objects_waits_for_the_pass_that_thaws() -> None:
    now = [0.0]
    passes = FullPasses(lambda callback: None, thaw_interval=300.0, clock=lambda: now[0])
    passes.settle()
    once_in_use = Cycle()
    reference = weakref.ref(once_in_use)
    passes.full_pass()  # frozen while in use
    del once_in_use
    now[0] = 299.0
    passes.full_pass()
    assert reference() is not None, "a frozen object is never collected..."
    now[0] = 300.0
    passes.full_pass()  # the thaw interval is over: everything thawed first
    assert reference() is None, "...until everything is thawed"


async def run_until(passes: FullPasses, done: Callable[[], bool], timeout: float = 5.0) -> None:
    task = asyncio.create_task(passes.run())
    try:
        async with asyncio.timeout(timeout):
            while not done():
                await asyncio.sleep(0.005)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_the_pass_waits_for_the_queue_to_be_idle() -> None:
    waiting: list[Callable[[], None]] = []
    passes = FullPasses(waiting.append, min_interval=0.01, max_interval=30.0)

    async def idle_later() -> None:
        while not waiting:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)
        assert passes.passes == 0, "no pass while the queue still has pods"
        waiting.pop()()

    helper = asyncio.create_task(idle_later())
    await run_until(passes, lambda: passes.passes == 1)
    await helper


async def test_a_busy_queue_gets_its_pass_at_the_longest_interval() -> None:
    never_idle: list[Callable[[], None]] = []
    passes = FullPasses(never_idle.append, min_interval=0.01, max_interval=0.05)
    garbage = cyclic_garbage_alive()
    await run_until(passes, lambda: passes.passes >= 2)
    assert garbage() is None
    assert len(never_idle) >= 2


def test_a_pass_counts_the_frozen_objects_only_for_a_debug_log(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Counting them walks every frozen object (60 ms at 5,000 nodes): not for a log nobody reads."""
    counted: list[int] = []
    real = gc.get_freeze_count

    def counting() -> int:
        counted.append(1)
        return real()

    monkeypatch.setattr(gc, "get_freeze_count", counting)
    passes = FullPasses(lambda callback: None)
    with caplog.at_level(logging.INFO, logger="secondary_scheduler.scheduler.garbage"):
        passes.full_pass()
    assert counted == []
    with caplog.at_level(logging.DEBUG, logger="secondary_scheduler.scheduler.garbage"):
        passes.full_pass()
    assert counted == [1] and "frozen" in caplog.text
