"""`python -m bench.replay`: how fast `secsched replay` goes (issue 37's target: 500 decisions/s at
1,000 nodes, a generated week of 10,000 VMs in under a minute per profile).

Stand-alone (the bench sections need a cluster; this needs none): it generates the week in memory
(seeded), replays it once per example profile over generated nodes, and prints one line per profile
with the wall time, the decisions and decisions per second, plus the machine and the date, for the
docs/benchmarks.md entry. The generator's own time is included (it streams the records as the
replay consumes them) and measured apart first.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import time
from pathlib import Path

from secondary_scheduler.config import load_config
from secondary_scheduler.plugins.registry import catalog_of, load_registry
from secondary_scheduler.replay.cluster import NodeShape, StartingCluster
from secondary_scheduler.replay.engine import ProfileReplay, ReplayOptions
from secondary_scheduler.replay.generate import FleetOptions, FleetTrace

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "replay"
PROFILES = (
    "targetloadpacking.yaml",
    "loadvariationriskbalancing.yaml",
    "lowriskovercommitment.yaml",
    "default.yaml",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vms", type=int, default=10_000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="append", help="example config(s) to replay (default: all four)")
    args = parser.parse_args()
    registry = load_registry()
    fleet = FleetTrace(FleetOptions(vms=args.vms, days=args.days, seed=args.seed))
    started = time.perf_counter()
    records = sum(1 for _ in fleet.records())
    generating = time.perf_counter() - started
    print(
        f"# {datetime.datetime.now().isoformat(timespec='minutes')} on {platform.node()}: "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}"
    )
    print(
        f"# trace: {args.vms} VMs over {args.days:g} days (seed {args.seed}): {records:,} records, "
        f"generated alone in {generating:.1f} s; cluster: {args.nodes} nodes of 32 cores, 128Gi"
    )
    cluster = StartingCluster.generated(args.nodes, NodeShape.parse("32,128Gi"))
    for name in args.profile or PROFILES:
        path = EXAMPLES / name
        config = load_config(path.read_text(), str(path), catalog=catalog_of(registry)).config
        for profile in config.profiles:
            engine = ProfileReplay(profile, config, registry, cluster, ReplayOptions(seed=args.seed))
            cpu = time.process_time()
            result = asyncio.run(engine.run(fleet.records()))
            cpu = time.process_time() - cpu
            print(
                f"{name}: {result.seconds:.1f} s wall ({cpu:.1f} s CPU), {result.decisions:,} decisions, "
                f"{result.decisions_per_second:,.0f}/s wall, {result.decisions / cpu:,.0f}/s CPU; "
                f"node-minutes over target {result.node_minutes_over_target:,.0f}, "
                f"p99 node CPU {result.p99_node_cpu:.0%}, nodes in use {result.mean_nodes_in_use:,.0f}"
            )


if __name__ == "__main__":
    main()
