"""Waiting for the cluster to reach a state, with a message that says what never happened."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def wait_for(
    probe: Callable[[], Awaitable[T | None]],
    what: str,
    timeout: float = 60.0,
    interval: float = 0.25,
) -> T:
    """Call `probe` until it returns something truthy; raise TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = await probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        await asyncio.sleep(interval)
