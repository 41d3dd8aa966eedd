"""`python -m bench` (`make bench`): measure, then write docs/benchmarks.md."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.context import BenchOptions
from bench.machine import REPOSITORY
from bench.runner import default_command, run
from bench.sections import SECTIONS
from bench.workloadclasses import CLASS_NAMES

DEFAULT_SIZES = (100, 1000, 5000)
DEFAULT_PODS = {100: 1000, 1000: 2000, 5000: 3000}
"""Measured pods per size for the throughput section when --pods is not given (2,000 otherwise)."""
VOLUME_DEFAULT_SIZES = (1000,)
"""The volumes section measures here unless --sizes is given (then at every size)."""
GANG_DEFAULT_SIZES = (1000,)
"""The gang section measures here unless --sizes is given (then at every size)."""
WORKLOADS_DEFAULT_SIZES = (1000, 5000)
"""The workloads section measures here unless --sizes is given (then at every size)."""
WORKLOADS_DEFAULT_PODS = {1000: (500, 500), 5000: (1000, 1000)}
"""(pre-existing, measured) pods per class of the workloads section when --workload-existing and
--workload-pods are not given (at another size: half its nodes each, at most 1,000)."""
NODE_LEASE_SECONDS = 24 * 3600
"""KWOK renews a node's Lease every quarter of its duration, and the nodes of one size are made
together, so their renewals come as one burst (1,000 writes within about 45 seconds at 1,000
nodes): with 1800 s leases one fell every 7.5 minutes, into whichever runs were going (2026-11-26,
1,000 nodes: five open-loop runs had one, each the slower of its scheduler's two runs of the
class). With a day's lease the first renewal comes after six hours."""
CONTROL_PLANE_GOGC = 400
"""GOGC for the cluster's Go processes (etcd, kube-apiserver, kube-controller-manager, KWOK,
Prometheus), never a scheduler's. With Go's default of 100 the API server collected every 6-12 s at
1,000 nodes, each mark 0.4-0.9 s of CPU on this two-core machine, and about half of both
schedulers' slow open-loop pods were in flight during one (2026-11-26, gctrace check runs); at 400
it collected 11-39 s apart, with a heap of 0.7-1.1 GB (0.15-0.24 GB live). A real control plane has
cores of its own for this."""
SECTION_DEFAULT_SIZES = {
    "volumes": VOLUME_DEFAULT_SIZES,
    "gang": GANG_DEFAULT_SIZES,
    "workloads": WORKLOADS_DEFAULT_SIZES,
}


def _numbers(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from error
    if not values or any(value <= 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def _range(text: str) -> tuple[int, int]:
    values = _numbers(text)
    if len(values) != 2 or values[0] > values[1]:
        raise argparse.ArgumentTypeError(f"expected MIN,MAX with MIN <= MAX, got {text!r}")
    return values[0], values[1]


def _sections(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in names if name not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown section(s) {', '.join(unknown) or text!r}; known: {', '.join(SECTIONS)}"
        )
    return names


def _classes(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in names if name not in CLASS_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown workload class(es) {', '.join(unknown) or text!r}; known: {', '.join(CLASS_NAMES)}"
        )
    return names


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from error
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    default_workdir = Path(os.environ.get("TMPDIR", "/tmp")) / "secsched-bench"
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark our scheduler against the upstream kube-scheduler on a local KWOK "
        "cluster and write the results to docs/benchmarks.md.",
    )
    p.add_argument(
        "--sizes",
        type=_numbers,
        default=None,
        help="cluster sizes in nodes (default 100,1000,5000; 1000 when only the volumes or gang sections "
        "run, 1000,5000 when only the workloads section runs); the volumes and gang sections measure at "
        "every size given here, by default at 1000 only, the workloads section at 1000 and 5000",
    )
    p.add_argument(
        "--pods",
        type=_numbers,
        default=None,
        help="measured pods per size (one value for every size, or one per size; default 1000, 2000, "
        "3000 at 100, 1000, 5000 nodes, else 2000)",
    )
    p.add_argument(
        "--volume-pods",
        type=_numbers,
        default=(500,),
        help="PVC-bearing pods per size of the volumes section (one value, or one per size)",
    )
    p.add_argument(
        "--gang-groups",
        type=_numbers,
        default=(50,),
        help="PodGroups per size of the gang section (one value, or one per size; default 50, at 1000 "
        "nodes unless --sizes is given)",
    )
    p.add_argument(
        "--gang-members",
        type=_range,
        default=(8, 16),
        help="MIN,MAX pods of a gang in the gang section (minMember is the gang's size; default 8,16)",
    )
    p.add_argument(
        "--workload-pods",
        type=_numbers,
        default=None,
        help="measured pods per class and size of the workloads section (one value, or one per size; "
        "default 500 at 1000 nodes, 1000 at 5000)",
    )
    p.add_argument(
        "--workload-existing",
        type=_numbers,
        default=None,
        help="pre-existing (already bound) pods per class and size of the workloads section (one value, "
        "or one per size; default 500 at 1000 nodes, 1000 at 5000; the preemption class has one per node)",
    )
    p.add_argument(
        "--workload-classes",
        type=_classes,
        default=CLASS_NAMES,
        help=f"workload classes to measure (comma-separated; default all: {', '.join(CLASS_NAMES)})",
    )
    p.add_argument(
        "--workload-repeats", type=int, default=1, help="saturation runs per scheduler, class and size"
    )
    p.add_argument(
        "--open-loop",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after each class's saturation runs, run each scheduler once at a fixed arrival rate",
    )
    p.add_argument(
        "--open-loop-fraction",
        type=_fraction,
        default=0.5,
        help="the open-loop arrival rate as a share of the lower of the two saturation throughputs",
    )
    p.add_argument(
        "--open-loop-max-rate",
        type=float,
        default=30.0,
        help="the most pods/s of an open-loop run (0: no ceiling); at 60-110 pods/s the control plane "
        "alone kept a 2-CPU machine 80-96 %% busy, and latency measured the machine's queue",
    )
    p.add_argument("--open-loop-pods", type=int, default=500, help="pods of each open-loop run")
    p.add_argument(
        "--open-loop-repeats",
        type=int,
        default=2,
        help="open-loop runs per scheduler, class and size (ABBA order; latencies pooled)",
    )
    p.add_argument(
        "--placement-nodes", type=int, default=100, help="nodes of the placement section's clusters"
    )
    p.add_argument("--placement-vms", type=int, default=500, help="VMs the placement section places per run")
    p.add_argument(
        "--placement-bursts", type=int, default=5, help="bursts the placement section's VMs arrive in"
    )
    p.add_argument(
        "--placement-burst-seconds",
        type=float,
        default=5.0,
        help="seconds each placement burst is spread over",
    )
    p.add_argument(
        "--placement-burst-pause",
        type=float,
        default=10.0,
        help="seconds between one placement burst all bound and the next",
    )
    p.add_argument("--qps", type=float, default=5000.0, help="client QPS of both schedulers")
    p.add_argument("--burst", type=int, default=5000, help="client burst of both schedulers")
    p.add_argument("--repeats", type=int, default=2, help="runs per scheduler and size (ABBA order)")
    p.add_argument("--concurrency", type=int, default=32, help="pod creations in flight")
    p.add_argument(
        "--kube-default",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run once each at the smallest size with kube-scheduler's default qps 50/burst 100",
    )
    p.add_argument("--kube-default-pods", type=int, default=1000, help="pods for the qps 50 runs")
    p.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="sample our scheduler with py-spy during the workloads section's saturation runs and "
        "report where its time goes (needs py-spy: the dev extra installs it)",
    )
    p.add_argument(
        "--profile-open-loop",
        action="store_true",
        help="sample its open-loop runs too (to find where their time goes; not for the measured run: "
        "the sampler's own CPU competes with the measured processes on a small machine)",
    )
    p.add_argument(
        "--only", type=_sections, default=tuple(SECTIONS), help="sections to run (comma-separated)"
    )
    p.add_argument(
        "--output",
        default=str(REPOSITORY / "docs" / "benchmarks.md"),
        help="the document to update ('-' prints the Markdown instead)",
    )
    p.add_argument(
        "--max-load",
        type=float,
        default=1.0,
        help="wait until the 1-minute load average is below this before starting (0: do not wait)",
    )
    p.add_argument("--load-timeout", type=float, default=600.0, help="seconds to wait for --max-load")
    p.add_argument(
        "--workdir", type=Path, default=None, help=f"logs and raw results (default {default_workdir}/…)"
    )
    p.add_argument("--cluster-name", default="secsched-bench")
    p.add_argument(
        "--node-lease-seconds",
        type=int,
        default=NODE_LEASE_SECONDS,
        help=(
            "node Lease duration; KWOK renews each every quarter of it, the nodes added together within a "
            "minute of each other (a burst of one write per node that slows the runs it falls in). "
            "The default puts the first renewal six hours after the nodes were made, past any benchmark"
        ),
    )
    p.add_argument(
        "--control-plane-gogc",
        type=int,
        default=CONTROL_PLANE_GOGC,
        help=(
            "GOGC for etcd, kube-apiserver, kube-controller-manager, KWOK and Prometheus (never the "
            "schedulers measured), so the API server's garbage collections do not set the latency "
            "tails; 0: Go's default (100)"
        ),
    )
    return p


def _sizes(given: tuple[int, ...] | None, sections: Sequence[str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the cluster's sizes, the volumes section's sizes): ``--sizes`` for both if given; else the
    defaults of the sections that run (throughput and placement 100, 1000, 5000; volumes and gang 1000;
    workloads 1000, 5000)."""
    if given:
        return given, given
    sizes: set[int] = set()
    for name in sections:
        sizes.update(SECTION_DEFAULT_SIZES.get(name, DEFAULT_SIZES))
    return tuple(sorted(sizes)), VOLUME_DEFAULT_SIZES


def _per_size(
    given: tuple[int, ...] | None, sizes: tuple[int, ...], which: int, option: str
) -> tuple[int, ...]:
    """One value per size: ``given`` (one for all, or one each), else the workloads section's
    default (``which``: 0 pre-existing, 1 measured)."""
    if given is None:
        return tuple(WORKLOADS_DEFAULT_PODS.get(size, (min(1000, size // 2),) * 2)[which] for size in sizes)
    if len(given) == 1:
        return given * len(sizes)
    if len(given) != len(sizes):
        parser().error(f"{option} has {len(given)} values for {len(sizes)} sizes")
    return given


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    sizes, volume_sizes = _sizes(args.sizes, args.only)
    pods: tuple[int, ...] = args.pods or tuple(DEFAULT_PODS.get(size, 2000) for size in sizes)
    volume_pods: tuple[int, ...] = args.volume_pods
    if len(volume_pods) == 1:
        volume_pods = volume_pods * len(volume_sizes)
    if len(volume_pods) != len(volume_sizes):
        parser().error(f"--volume-pods has {len(volume_pods)} values for {len(volume_sizes)} sizes")
    gang_sizes = args.sizes or GANG_DEFAULT_SIZES
    gang_groups: tuple[int, ...] = args.gang_groups
    if len(gang_groups) == 1:
        gang_groups = gang_groups * len(gang_sizes)
    if len(gang_groups) != len(gang_sizes):
        parser().error(f"--gang-groups has {len(gang_groups)} values for {len(gang_sizes)} sizes")
    workload_sizes: tuple[int, ...] = args.sizes or WORKLOADS_DEFAULT_SIZES
    workload_pods = _per_size(args.workload_pods, workload_sizes, 1, "--workload-pods")
    workload_existing = _per_size(args.workload_existing, workload_sizes, 0, "--workload-existing")
    if len(pods) == 1:
        pods = pods * len(sizes)
    if len(pods) != len(sizes):
        parser().error(f"--pods has {len(pods)} values for {len(sizes)} sizes")
    if len(set(sizes)) != len(sizes):
        parser().error("--sizes has a size twice")
    if args.control_plane_gogc < 0:
        parser().error(
            f"--control-plane-gogc must be 0 (Go's default) or more, not {args.control_plane_gogc}"
        )
    if not 1 <= args.placement_bursts <= args.placement_vms or args.placement_nodes < 1:
        parser().error(
            f"--placement-nodes {args.placement_nodes}, --placement-vms {args.placement_vms}, "
            f"--placement-bursts {args.placement_bursts}: give at least one node and 1 to VMs bursts"
        )
    if args.placement_burst_seconds < 0 or args.placement_burst_pause < 0:
        parser().error("--placement-burst-seconds and --placement-burst-pause must be 0 or more")
    pairs = sorted(zip(sizes, pods, strict=True))  # the cluster only grows
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    workdir = args.workdir or Path(os.environ.get("TMPDIR", "/tmp")) / "secsched-bench" / stamp
    options = BenchOptions(
        sizes=tuple(size for size, _ in pairs),
        pods=tuple(count for _, count in pairs),
        qps=args.qps,
        burst=args.burst,
        repeats=max(1, args.repeats),
        concurrency=max(1, args.concurrency),
        kube_default=args.kube_default,
        kube_default_pods=args.kube_default_pods,
        workdir=workdir.resolve(),
        volume_sizes=tuple(size for size, _ in sorted(zip(volume_sizes, volume_pods, strict=True))),
        volume_pods=tuple(count for _, count in sorted(zip(volume_sizes, volume_pods, strict=True))),
        gang_sizes=tuple(size for size, _ in sorted(zip(gang_sizes, gang_groups, strict=True))),
        gang_groups=tuple(count for _, count in sorted(zip(gang_sizes, gang_groups, strict=True))),
        gang_members=args.gang_members,
        profile=args.profile,
        profile_open_loop=args.profile_open_loop,
        workload_sizes=tuple(sorted(workload_sizes)),
        workload_pods=tuple(count for _, count in sorted(zip(workload_sizes, workload_pods, strict=True))),
        workload_existing=tuple(
            count for _, count in sorted(zip(workload_sizes, workload_existing, strict=True))
        ),
        workload_classes=args.workload_classes,
        workload_repeats=max(1, args.workload_repeats),
        open_loop=args.open_loop,
        open_loop_fraction=args.open_loop_fraction,
        open_loop_max_rate=max(0.0, args.open_loop_max_rate),
        open_loop_pods=max(1, args.open_loop_pods),
        open_loop_repeats=max(1, args.open_loop_repeats),
        placement_nodes=args.placement_nodes,
        placement_vms=args.placement_vms,
        placement_bursts=args.placement_bursts,
        placement_burst_seconds=args.placement_burst_seconds,
        placement_burst_pause=args.placement_burst_pause,
    )
    output = None if args.output == "-" else Path(args.output)
    markdown = run(
        options,
        args.only,
        output,
        max_load=args.max_load,
        load_timeout=args.load_timeout,
        cluster_name=args.cluster_name,
        node_lease_seconds=args.node_lease_seconds,
        control_plane_gogc=args.control_plane_gogc or None,
        command=default_command(),
    )
    if output is None:
        sys.stdout.write(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
