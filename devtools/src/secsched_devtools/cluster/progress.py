"""Progress reporting for long steps: a live line on a terminal, periodic lines in CI logs."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

console = Console(stderr=True, highlight=False)


def format_elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Step:
    """One named step: updates its detail text, reports elapsed time when it ends."""

    def __init__(self, title: str, log_every: float) -> None:
        self.title = title
        self.started = time.monotonic()
        self.detail = ""
        self._log_every = log_every
        self._last_log = self.started
        self._status = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def update(self, detail: str) -> None:
        self.detail = detail
        text = f"{self.title}: {detail} ({format_elapsed(self.elapsed)})"
        if self._status is not None:
            self._status.update(text)
        elif time.monotonic() - self._last_log >= self._log_every:
            self._last_log = time.monotonic()
            console.print(f"  … {text}")


@contextmanager
def step(title: str, log_every: float = 30.0) -> Iterator[Step]:
    """Run a step, showing what it does and how long it took (or that it failed)."""
    current = Step(title, log_every)
    interactive = sys.stderr.isatty()
    if not interactive:
        console.print(f"→ {title}")
    try:
        if interactive:
            with console.status(title) as status:
                current._status = status  # type: ignore[assignment]
                yield current
        else:
            yield current
    except BaseException:
        console.print(f"[red]✗[/red] {title} failed after {format_elapsed(current.elapsed)}")
        raise
    console.print(f"[green]✓[/green] {title} ({format_elapsed(current.elapsed)})")
