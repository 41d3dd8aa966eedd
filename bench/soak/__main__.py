"""`python -m bench.soak` (`make soak`): churn for an hour, say how flat ours stayed.

Exits 1 when a bound is exceeded (the figures say which), 2 on a bad option.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.soak.options import Bounds, SoakOptions
from bench.soak.report import WARM_UP_SECONDS, RunContext, render, write_samples, write_section
from bench.soak.run import soak
from secondary_scheduler.config.base import parse_go_duration
from secsched_devtools.cluster.progress import console
from secsched_devtools.repo import REPO


def _duration(text: str) -> float:
    """Seconds from ``90`` (plain seconds) or a Go duration: ``90s``, ``45m``, ``1h``, ``1h30m``."""
    try:
        value = float(text) if text.replace(".", "", 1).isdigit() else parse_go_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a duration like 3600, 45m or 1h, got {text!r}") from error
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    defaults, bounds = SoakOptions(), Bounds()
    p = argparse.ArgumentParser(
        prog="python -m bench.soak",
        description="Run our scheduler under an hour of churn (pods, KWOK nodes, flapping metrics) on a "
        "local cluster, sample its memory, tasks, watches and latency, and fail on growth.",
    )
    p.add_argument("--duration", type=_duration, default=defaults.duration, help="churn time (default 1h)")
    p.add_argument("--nodes", type=int, default=defaults.nodes, help="nodes that stay (default %(default)s)")
    p.add_argument("--pod-rate", type=float, default=defaults.pod_rate, help="pods created per second")
    p.add_argument(
        "--pod-lifetime", type=_duration, default=defaults.pod_lifetime, help="seconds each pod lives"
    )
    p.add_argument("--node-churn-every", type=_duration, default=defaults.node_churn_every)
    p.add_argument("--node-churn-count", type=int, default=defaults.node_churn_count)
    p.add_argument("--node-churn-pool", type=int, default=defaults.node_churn_pool)
    p.add_argument("--flap-every", type=_duration, default=defaults.flap_every)
    p.add_argument("--outage", type=_duration, default=defaults.outage)
    p.add_argument("--sample-every", type=_duration, default=defaults.sample_every)
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--work-dir", type=Path, default=defaults.work_dir, help="scheduler log and samples.csv")
    p.add_argument("--cluster-name", default=defaults.cluster_name)
    p.add_argument(
        "--docs",
        type=Path,
        nargs="?",
        const=REPO / "docs" / "reliability.md",
        default=None,
        help="write the figures into this page's Soak section (docs/reliability.md when no path is given)",
    )
    p.add_argument("--max-rss-slope", type=float, default=bounds.rss_slope_mib_per_hour, help="MiB per hour")
    p.add_argument("--max-task-growth", type=float, default=bounds.task_growth)
    p.add_argument("--max-watch-growth", type=float, default=bounds.watch_growth)
    p.add_argument("--max-connections-beyond-watches", type=float, default=bounds.connections_beyond_watches)
    p.add_argument("--max-fd-growth", type=float, default=bounds.fd_growth)
    p.add_argument("--max-latency-ratio", type=float, default=bounds.latency_ratio)
    return p


def options_from(args: argparse.Namespace, command: str) -> SoakOptions:
    return SoakOptions(
        duration=args.duration,
        nodes=args.nodes,
        pod_rate=args.pod_rate,
        pod_lifetime=args.pod_lifetime,
        node_churn_every=args.node_churn_every,
        node_churn_count=args.node_churn_count,
        node_churn_pool=args.node_churn_pool,
        flap_every=args.flap_every,
        outage=args.outage,
        sample_every=args.sample_every,
        seed=args.seed,
        cluster_name=args.cluster_name,
        work_dir=args.work_dir,
        docs=args.docs,
        command=command,
        bounds=Bounds(
            rss_slope_mib_per_hour=args.max_rss_slope,
            task_growth=args.max_task_growth,
            watch_growth=args.max_watch_growth,
            connections_beyond_watches=args.max_connections_beyond_watches,
            fd_growth=args.max_fd_growth,
            latency_ratio=args.max_latency_ratio,
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = " ".join(["python -m bench.soak", *map(shlex.quote, arguments)])
    p = parser()
    args = p.parse_args(arguments)
    try:
        options = options_from(args, command)
    except ValueError as error:
        p.error(str(error))
    if options.duration < 4 * WARM_UP_SECONDS:
        console.print(
            f"[yellow]warning[/yellow]: --duration {options.duration / 60:g}m: the RSS slope is fitted "
            f"after the first quarter, and ours' caches fill for about {WARM_UP_SECONDS // 60} minutes "
            "(docs/reliability.md, Soak), so under "
            f"{4 * WARM_UP_SECONDS // 60} minutes that fill is in the fit and the RSS check will likely "
            "fail; only a run of 60m (the default) gives a verdict on RSS",
            soft_wrap=True,
        )
    context = RunContext.now(command)
    result = soak(options, lambda line: console.print(f"  … {line}", soft_wrap=True))
    write_samples(options.work_dir / "samples.csv", result.samples)
    body = render(context, options, result.analysis, result.churned, result.samples, result.missed)
    if options.docs is not None:
        write_section(options.docs, body)
        console.print(f"figures written to {options.docs} (samples: {options.work_dir / 'samples.csv'})")
    print(body)
    if result.analysis.passed:
        console.print("[green]✓[/green] ours stayed within every bound")
        return 0
    for check in result.analysis.failures():
        console.print(f"[red]✗[/red] {check.what}: {check.measured:.2f} > {check.allowed:g} {check.unit}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
