"""What every section of a benchmark run gets: the options, the cluster, clients, progress."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from bench.machine import BusyMeter, load_average
from secondary_scheduler.kube.client import ApiClient
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.progress import console


@dataclass(frozen=True)
class BenchOptions:
    sizes: tuple[int, ...]
    pods: tuple[int, ...]
    """Pods per size, aligned with ``sizes``."""
    qps: float
    burst: int
    repeats: int
    concurrency: int
    kube_default: bool
    kube_default_pods: int
    workdir: Path
    quiet_margin: float = 0.3
    """A run starts once the machine keeps at most this many CPUs busier than the idle cluster did
    (measured once per size, after it settled), or after ``quiet_timeout``."""
    quiet_timeout: float = 45.0
    stall_timeout: float = 90.0
    """A run gives up when no pod got bound for this long."""
    warmup_pods: int = 20
    volume_sizes: tuple[int, ...] = ()
    """Sizes at which the volumes section measures (a subset of ``sizes``)."""
    volume_pods: tuple[int, ...] = ()
    """PVC-bearing pods per volume size, aligned with ``volume_sizes``."""
    gang_sizes: tuple[int, ...] = ()
    """Sizes at which the gang section measures (a subset of ``sizes``)."""
    gang_groups: tuple[int, ...] = ()
    """PodGroups per gang size, aligned with ``gang_sizes``."""
    gang_members: tuple[int, int] = (8, 16)
    """The fewest and the most pods of a gang (minMember is its size)."""
    workload_sizes: tuple[int, ...] = ()
    """Sizes at which the workloads section measures (a subset of ``sizes``)."""
    workload_pods: tuple[int, ...] = ()
    """Measured pods per workload size, aligned with ``workload_sizes``."""
    workload_existing: tuple[int, ...] = ()
    """Pre-existing (already bound) pods per workload size, aligned with ``workload_sizes``."""
    workload_classes: tuple[str, ...] = ()
    """The workload classes to measure, in this order (empty: none)."""
    workload_repeats: int = 1
    """Saturation runs per scheduler, class and size."""
    open_loop: bool = True
    """Also run each scheduler per class at a fixed arrival rate below both one's capacity."""
    open_loop_repeats: int = 2
    """Open-loop runs per scheduler, class and size, in ABBA order; their latencies are pooled: one
    run's p99 of 500 pods is its fifth-slowest pod, which moved up to 2x between runs."""
    open_loop_fraction: float = 0.5
    """The open-loop arrival rate: this share of the lower of the two saturation throughputs..."""
    open_loop_max_rate: float = 30.0
    """...and at most this many pods/s (0: no ceiling): above, the control plane's own work kept the
    2-CPU machine 80-96 % busy, and latency measured the machine's queue."""
    open_loop_pods: int = 500
    profile: bool = True
    """Sample our scheduler's stacks (py-spy) during the workloads section's saturation runs."""
    profile_open_loop: bool = False
    """...and during its open-loop runs: to find where their time goes, not for the measured run (the
    sampler's own CPU competes with the measured processes on a small machine)."""

    placement_nodes: int = 100
    """Nodes of the placement section's clusters (its own, one per run)."""
    placement_vms: int = 500
    placement_bursts: int = 5
    """The placement section's VMs arrive in this many bursts of nearly equal size..."""
    placement_burst_seconds: float = 5.0
    """...each spread over this many seconds..."""
    placement_burst_pause: float = 10.0
    """...the next this many seconds after the previous one was all bound (so the schedulers'
    Prometheus has scraped its load)."""

    def pods_for(self, nodes: int) -> int:
        return self.pods[self.sizes.index(nodes)]

    def volume_pods_for(self, nodes: int) -> int:
        return self.volume_pods[self.volume_sizes.index(nodes)]

    def gang_groups_for(self, nodes: int) -> int:
        return self.gang_groups[self.gang_sizes.index(nodes)]

    def workload_pods_for(self, nodes: int) -> int:
        return self.workload_pods[self.workload_sizes.index(nodes)]

    def workload_existing_for(self, nodes: int) -> int:
        return self.workload_existing[self.workload_sizes.index(nodes)]


@dataclass
class BenchContext:
    """One cluster size: the cluster (with ``nodes`` nodes) and a client without rate limit."""

    options: BenchOptions
    cluster: LocalCluster
    nodes: int
    api: ApiClient
    """The benchmark's own requests: nodes, namespaces, the pods and their watch (long timeout)."""
    idle_cpus: float = 0.0
    """CPUs the machine kept busy with the settled, idle cluster at this size."""
    console: Console = field(default_factory=lambda: console)

    def log(self, message: str) -> None:
        self.console.print(message)

    async def measure_idle(self, seconds: int = 6) -> float:
        """How busy the machine is with nothing happening (the cluster's own heartbeats).

        The quietest second of a few, so that a burst of other work does not count.
        """
        meter = BusyMeter()
        samples = []
        for _ in range(seconds):
            await asyncio.sleep(1.0)
            samples.append(meter.sample())
        self.idle_cpus = min(samples)
        return self.idle_cpus

    async def wait_quiet(self, report: Callable[[str], None] | None = None) -> float:
        """Wait until the machine is nearly idle (settled after the last run); returns the CPUs busy."""
        meter = BusyMeter()
        deadline = time.monotonic() + self.options.quiet_timeout
        busy = 0.0
        calm = 0
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            busy = meter.sample()
            calm = calm + 1 if busy < self.idle_cpus + self.options.quiet_margin else 0
            if calm >= 2:
                return busy
            if report is not None:
                report(f"waiting for the machine to settle ({busy:.2f} CPUs busy, load {load_average():.2f})")
        return busy
