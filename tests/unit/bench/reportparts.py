"""What the bench's report tests build again and again: a run's header and a workloads record."""

from __future__ import annotations

import math
from pathlib import Path

from bench.context import BenchOptions
from bench.machine import Machine
from bench.runinfo import RunInfo
from bench.workloads_report import SATURATION, WorkloadRecord


def workload_options(classes: tuple[str, ...], workdir: Path = Path("/nonexistent")) -> BenchOptions:
    """The workloads section's options at 100 nodes (60 measured pods, 30 pre-existing) for ``classes``."""
    return BenchOptions(
        sizes=(100,),
        pods=(1000,),
        qps=5000.0,
        burst=5000,
        repeats=2,
        concurrency=32,
        kube_default=False,
        kube_default_pods=1000,
        workdir=workdir,
        workload_sizes=(100,),
        workload_pods=(60,),
        workload_existing=(30,),
        workload_classes=classes,
    )


def run_info(options: BenchOptions) -> RunInfo:
    """A run of ``--only workloads`` on a small made-up machine."""
    return RunInfo(
        command="python -m bench --only workloads",
        started="2025-01-01 00:00 UTC",
        machine=Machine(cpus=2, cpu_model="x", memory_gib=8.0, kernel="6", python="3.12"),
        versions={},
        load_before=0.1,
        load_waited=True,
        options=options,
    )


def load_record(
    klass: str, kind: str, mode: str, throughput: float, over: int | None, order: int
) -> WorkloadRecord:
    """One run of a load class at 100 nodes (60 pods, 30 pre-existing), ``over`` pods over its threshold."""
    return WorkloadRecord(
        klass=klass,
        mode=mode,
        kind=kind,
        nodes=100,
        repeat=0,
        order=order,
        existing=30,
        pods=60,
        bound=60,
        throughput=throughput,
        create_rate=500.0,
        p50=0.01,
        p99=0.02,
        max_latency=0.03,
        span=60 / throughput if throughput else math.nan,
        rate=math.nan if mode == SATURATION else 50.0,
        over_target=over,
        hot_start=0 if over is not None else None,
    )
