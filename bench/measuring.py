"""What every section measures the same way: the schedulers' configuration, CPU, counters, runs.

The sections compare ours with the upstream kube-scheduler run by run; each reads CPU time
from /proc, the scheduler's own counters from its /metrics page, waits for its pods with the
same stall rule and orders its runs ABBA. Those are here, once; what a section measures on
top (claims, gangs, workload classes) stays in its own module.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from bench.context import BenchContext
from bench.machine import load_average, process_cpu_seconds
from bench.stats import PodClock
from secsched_devtools.cluster.schedulers import (
    OURS,
    UPSTREAM,
    SchedulerRun,
    scheduler_config,
    start_scheduler,
)

SCHEDULER_NAME = "bench-scheduler"
LABELS = {OURS: "ours", UPSTREAM: "upstream"}
COMPONENTS = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager")
DEFERRED_WORK_SECONDS = 0.5
"""How long after its last pod is bound a scheduler's CPU is read: both send their Events after
the bindings (from tasks or goroutines of their own), and sending them is work the span must
count. Both schedulers wait the same."""
REPORT_EVERY_SECONDS = 0.5
"""How often a wait shows its progress."""


# -- configuration ---------------------------------------------------------------------------
def bench_config(qps: float, burst: int, kubeconfig: Path) -> str:
    """The one configuration both schedulers get.

    The kubeconfig goes into ``clientConnection``: kube-scheduler ignores ``--kubeconfig``
    when ``--config`` is given, and ours reads the same field.
    """
    config = scheduler_config(SCHEDULER_NAME, qps=qps, burst=burst)
    return config.replace("clientConnection:\n", f"clientConnection:\n  kubeconfig: {kubeconfig}\n", 1)


# -- CPU time -------------------------------------------------------------------------------
def cpu_seconds(
    context: BenchContext, scheduler: SchedulerRun | None, components: Sequence[str] = COMPONENTS
) -> dict[str, float]:
    """CPU seconds so far of the scheduler (if any), the cluster's ``components`` and this client."""
    cpu = {} if scheduler is None else {"scheduler": process_cpu_seconds(scheduler.process.pid)}
    for name in components:
        record = context.cluster.records.get(name)
        if record is not None:
            cpu[name] = process_cpu_seconds(record.pid)
    cpu["bench client"] = process_cpu_seconds(os.getpid())
    return cpu


async def cpu_seconds_settled(
    context: BenchContext, scheduler: SchedulerRun | None, components: Sequence[str] = COMPONENTS
) -> dict[str, float]:
    """``cpu_seconds`` once the scheduler has sent what its last pods caused (DEFERRED_WORK_SECONDS)."""
    await asyncio.sleep(DEFERRED_WORK_SECONDS)
    return cpu_seconds(context, scheduler, components)


# -- the scheduler's own counters -----------------------------------------------------------
def scheduler_counters(page: str) -> dict[str, float]:
    """The scheduler's own counters for the bench profile (summed over its samples) in a /metrics page."""
    profile = f'profile="{SCHEDULER_NAME}"'
    lines = page.splitlines()

    def sample(name: str, result: str) -> float:
        total = 0.0
        for line in lines:
            if (
                line.startswith(name)
                and line[len(name) : len(name) + 1] in (" ", "{")
                and profile in line
                and f'result="{result}"' in line
            ):
                total += float(line.rsplit(" ", 1)[1])
        return total

    return {
        "scheduled": sample("scheduler_schedule_attempts_total", "scheduled"),
        "failed": sample("scheduler_schedule_attempts_total", "unschedulable")
        + sample("scheduler_schedule_attempts_total", "error"),
        "duration_sum": sample("scheduler_scheduling_attempt_duration_seconds_sum", "scheduled"),
        "duration_count": sample("scheduler_scheduling_attempt_duration_seconds_count", "scheduled"),
    }


def read_counters(run: SchedulerRun) -> dict[str, float]:
    """The scheduler's own counters for the bench profile, read from one fetch of its page."""
    return scheduler_counters(run.get("/metrics").text)


def keep_counters(run: SchedulerRun, path: Path) -> dict[str, float]:
    """``read_counters``, also saving the whole page, so that a run's phases (queue, cycle, binding)
    can be compared between the schedulers after the fact."""
    page = run.get("/metrics").text
    path.write_text(page)
    return scheduler_counters(page)


# -- the runs of a section -------------------------------------------------------------------
@dataclass(frozen=True)
class StartedRun:
    """A scheduler started for one run, and how busy the machine was just before."""

    scheduler: SchedulerRun
    busy_before: float
    """CPUs the machine kept busy once it had settled (``BenchContext.wait_quiet``)."""
    load_before: float
    """The 1-minute load average then."""


@contextlib.asynccontextmanager
async def started_scheduler(
    context: BenchContext, kind: str, config: str, directory: Path, name: str, report: Callable[[str], None]
) -> AsyncIterator[StartedRun]:
    """Every run's start and end: wait until the machine has settled, note its load, start a fresh
    scheduler process (``kind``: ours or upstream) and wait for its caches; stop it on the way out."""
    busy = await context.wait_quiet(report)
    load = load_average()
    report("starting the scheduler")
    kubeconfig = context.cluster.kubeconfig
    scheduler = await asyncio.to_thread(start_scheduler, kind, config, kubeconfig, directory, name)
    try:
        yield StartedRun(scheduler, busy, load)
    finally:
        await asyncio.to_thread(scheduler.stop)


def abba(repeats: int, first: tuple[str, str] = (UPSTREAM, OURS)) -> Iterator[tuple[int, str]]:
    """(repeat, scheduler) in ABBA order (``first``, then reversed, ...), so that a machine getting
    slower or faster during a size does not favour either scheduler."""
    for repeat in range(repeats):
        for kind in first if repeat % 2 == 0 else first[::-1]:
            yield repeat, kind


class Measured(Protocol):
    @property
    def throughput(self) -> float: ...


_Run = TypeVar("_Run", bound=Measured)


def best_run(runs: Iterable[_Run], complete: Callable[[_Run], bool]) -> _Run | None:
    """The run with the highest throughput, ``complete`` runs first (interference from other work
    only ever slows a run down, so the best is the least disturbed)."""
    return max(
        runs,
        key=lambda r: (complete(r), -math.inf if math.isnan(r.throughput) else r.throughput),
        default=None,
    )


async def wait_for_progress(
    done_of: Callable[[], tuple[int, int]],
    describe: Callable[[], str],
    changed: asyncio.Event,
    report: Callable[[str], None],
    stall_timeout: float,
    creating: asyncio.Task[None] | None = None,
) -> None:
    """Until ``done_of()`` says (done, total) with done >= total, or done stood still for
    ``stall_timeout``; wakes when ``changed`` is set (the watches set it) and shows ``describe()``.
    A failed ``creating`` task raises its error here rather than stalling."""
    last, last_change, shown = -1, time.monotonic(), 0.0
    while True:
        if creating is not None and creating.done():
            error = creating.exception()
            if error is not None:
                raise error
        done, total = done_of()
        now = time.monotonic()
        if done != last:
            last, last_change = done, now
        if done >= total or now - last_change > stall_timeout:
            return
        if now - shown >= REPORT_EVERY_SECONDS:
            shown = now
            report(describe())
        changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout=REPORT_EVERY_SECONDS)


async def wait_bound(
    clock: PodClock,
    changed: asyncio.Event,
    names: set[str],
    report: Callable[[str], None],
    stall_timeout: float,
    created: Callable[[], int] | None = None,
    creating: asyncio.Task[None] | None = None,
) -> None:
    """Until every pod in ``names`` is bound, or nothing got bound for ``stall_timeout``; shows
    ``created()`` pods created too, if given."""
    total = len(names)

    def bound() -> tuple[int, int]:
        return clock.bound_count(names), total

    def describe() -> str:
        made = f"{created()}/{total} created, " if created is not None else ""
        return f"{made}{clock.bound_count(names)}/{total} bound"

    await wait_for_progress(bound, describe, changed, report, stall_timeout, creating)
