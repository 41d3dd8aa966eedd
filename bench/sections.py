"""Sections of a benchmark run: each measures something at every cluster size and renders Markdown.

To add one (placement quality, say): write a class with ``name``, ``title``,
``async measure(context)`` (called once per cluster size, in increasing order, on the
same cluster) and ``render(run) -> str`` (the section's Markdown body), then add it to
``SECTIONS``. `python -m bench --only <name>` runs just it and replaces just its part of
docs/benchmarks.md, between ``<!-- section: <name> -->`` and ``<!-- /section: <name> -->``.
"""

from __future__ import annotations

from collections.abc import Callable
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


def _throughput(options: BenchOptions) -> Section:
    from bench.throughput import ThroughputSection

    return ThroughputSection(options)


def _workloads(options: BenchOptions) -> Section:
    from bench.workloads import WorkloadsSection

    return WorkloadsSection(options)


def _placement(options: BenchOptions) -> Section:
    from bench.placement import PlacementSection

    return PlacementSection(options)


def _volumes(options: BenchOptions) -> Section:
    from bench.volumes import VolumesSection

    return VolumesSection(options)


def _gang(options: BenchOptions) -> Section:
    from bench.gang import GangSection

    return GangSection(options)


SECTIONS: dict[str, Callable[[BenchOptions], Section]] = {
    "throughput": _throughput,
    "workloads": _workloads,
    "volumes": _volumes,
    "gang": _gang,
    "placement": _placement,
}
