"""Waiting for the cluster to reach a state, with a message that says what never happened."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def poll_until(
    read: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    timed_out: Callable[[T], str],
    timeout: float = 60.0,
    interval: float = 0.25,
    waiting: Callable[[T], None] | None = None,
) -> T:
    """``read()`` every ``interval`` seconds until ``done`` says its value is the one wanted; return it.

    After ``timeout`` seconds, TimeoutError with ``timed_out(last value)``, which should say
    what is still missing. ``waiting`` sees each value that is not yet done (progress lines).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = await read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(timed_out(value))
        if waiting is not None:
            waiting(value)
        await asyncio.sleep(interval)


async def wait_for(
    probe: Callable[[], Awaitable[T | None]],
    what: str,
    timeout: float = 60.0,
    interval: float = 0.25,
) -> T:
    """Call `probe` until it returns something truthy; raise TimeoutError naming `what`."""
    found = await poll_until(
        probe,
        bool,
        lambda last: f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})",
        timeout,
        interval,
    )
    assert found is not None  # done() said it is truthy
    return found
