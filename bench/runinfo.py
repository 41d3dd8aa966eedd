"""What every section shares: the run it is part of (``RunInfo``) and the shape of a section.

Apart from the section table (``bench.sections``), so that a section can name these types
without importing the table that imports every section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bench.context import BenchContext, BenchOptions
from bench.machine import Machine


@dataclass(frozen=True)
class RunInfo:
    """Where and how the whole run happened (every section may quote it)."""

    command: str
    started: str
    """UTC, ISO 8601."""
    machine: Machine
    versions: dict[str, str]
    load_before: float
    """The 1-minute load average when the run began (other work on the machine)."""
    load_waited: bool
    """Whether that load was below the limit asked for."""
    options: BenchOptions

    def measured(self) -> str:
        """The line under each section's heading: when, with which command, on what machine."""
        return (
            f"_Measured {self.started} with `{self.command}` on {self.machine.describe()}; "
            f"1-minute load {self.load_before:.2f} when the run began._"
        )


class Section(Protocol):
    name: str
    title: str

    async def measure(self, context: BenchContext) -> None: ...

    def render(self, run: RunInfo) -> str: ...
