"""The machine a benchmark ran on, and how busy it was: /proc, read without extra packages."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from secondary_scheduler import __version__
from secsched_devtools.cluster import versions

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REPOSITORY = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Machine:
    cpus: int
    cpu_model: str
    memory_gib: float
    kernel: str
    python: str

    def describe(self) -> str:
        return (
            f"{self.cpus} CPUs ({self.cpu_model}), {self.memory_gib:.1f} GiB memory, "
            f"Linux {self.kernel}, Python {self.python}"
        )


def machine() -> Machine:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_kib = int(line.split()[1])
                break
    except OSError:
        pass
    return Machine(
        cpus=len(os.sched_getaffinity(0)),
        cpu_model=model,
        memory_gib=memory_kib / 1024 / 1024,
        kernel=platform.release(),
        python=sys.version.split()[0],
    )


def component_versions() -> dict[str, str]:
    return {
        "secondary-scheduler": f"{__version__} (commit {git_commit()})",
        "Kubernetes (kube-apiserver, kube-controller-manager)": versions.KUBERNETES,
        "upstream kube-scheduler (scheduler-plugins build)": versions.SCHEDULER_PLUGINS,
        "etcd": versions.ETCD,
        "KWOK": versions.KWOK,
    }


def git_commit() -> str:
    """The checked-out commit (read-only `git rev-parse`), or "unknown" outside a checkout."""
    try:
        result = subprocess.run(
            ["git", "-C", str(REPOSITORY), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return result.stdout.strip() or "unknown"


def load_average() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def wait_for_low_load(
    limit: float, timeout: float, report: Callable[[str], None], poll: float = 15.0
) -> tuple[float, bool]:
    """Sleep until the 1-minute load is below ``limit`` (or ``timeout`` passes).

    Returns the load when we stopped waiting and whether it was below the limit.
    """
    deadline = time.monotonic() + timeout
    while True:
        load = load_average()
        if limit <= 0 or load < limit:
            return load, True
        if time.monotonic() >= deadline:
            report(f"1-minute load still {load:.2f} after {timeout:.0f}s; measuring anyway")
            return load, False
        report(f"1-minute load {load:.2f} ≥ {limit:.2f}: waiting for other work on this machine to finish")
        time.sleep(min(poll, max(0.0, deadline - time.monotonic())))


def _cpu_times() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already in user
    return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS


class BusyMeter:
    """How many CPUs the whole machine kept busy between two calls."""

    def __init__(self) -> None:
        self._busy, self._total = _cpu_times()
        self._cpus = os.cpu_count() or 1

    def sample(self) -> float:
        busy, total = _cpu_times()
        spent, elapsed = busy - self._busy, total - self._total
        self._busy, self._total = busy, total
        return self._cpus * spent / elapsed if elapsed > 0 else 0.0


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
