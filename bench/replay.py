"""`python -m bench.replay`: how fast `secsched replay` goes (issue 37's target: 500 decisions/s at
1,000 nodes, a generated week of 10,000 VMs in under a minute per profile).

Stand-alone (the bench sections need a cluster; this needs none): it generates the week in memory
(seeded), replays it once per example profile over generated nodes, and prints one line per profile
with the wall and CPU time, the decisions and decisions per second, plus the machine, the date and
the load. The trace is streamed from the generator (``FleetTrace.stream``: an instant's samples as
one batch) as the replay consumes it, as `secsched replay` streams a trace file, so the generator's
time is part of each replay's; it is also measured alone
first (wall and CPU), and each line says what the replay took without it (its CPU less the
generator's). ``--docs`` writes the results as the `replay` section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import re
import time
from dataclasses import dataclass

from bench.machine import REPOSITORY, git_commit, load_average, machine
from bench.report import number, table
from secondary_scheduler.config import load_config
from secondary_scheduler.plugins.registry import catalog_of, load_registry
from secondary_scheduler.replay.cluster import NodeShape, StartingCluster
from secondary_scheduler.replay.engine import ProfileReplay, ReplayOptions
from secondary_scheduler.replay.generate import FleetOptions, FleetTrace
from secondary_scheduler.replay.report import ProfileResult
from secondary_scheduler.replay.trace import UsageBatch

EXAMPLES = REPOSITORY / "examples" / "replay"
PROFILES = (
    "targetloadpacking.yaml",
    "loadvariationriskbalancing.yaml",
    "lowriskovercommitment.yaml",
    "default.yaml",
)
NODE_SHAPE = "32,128Gi"
DOCS = REPOSITORY / "docs" / "benchmarks.md"
SECTION = "replay"


@dataclass(frozen=True)
class Run:
    """One profile's replay of the week."""

    config: str
    result: ProfileResult
    cpu_seconds: float
    loads: tuple[float, float]
    """The 1-minute load average before and after it."""

    def per_cpu_second(self, less: float = 0.0) -> float:
        return self.result.decisions / max(self.cpu_seconds - less, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vms", type=int, default=10_000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="append", help="example config(s) to replay (default: all four)")
    parser.add_argument("--docs", action="store_true", help=f"write the results to {DOCS.name}")
    args = parser.parse_args()
    registry = load_registry()
    fleet = FleetTrace(FleetOptions(vms=args.vms, days=args.days, seed=args.seed))
    host = machine()
    started_at = datetime.datetime.now(datetime.UTC)
    wall, cpu = time.perf_counter(), time.process_time()
    records = sum(len(record.keys) if type(record) is UsageBatch else 1 for record in fleet.stream())
    generating_wall, generating_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"# {started_at:%Y-%m-%d %H:%M} UTC, commit {git_commit()}: {host.describe()}")
    print(
        f"# trace: {args.vms:,} VMs over {args.days:g} days (seed {args.seed}): {records:,} records, "
        f"generated alone in {generating_wall:.1f} s wall, {generating_cpu:.1f} s CPU; "
        f"cluster: {args.nodes:,} nodes of {NODE_SHAPE}"
    )
    cluster = StartingCluster.generated(args.nodes, NodeShape.parse(NODE_SHAPE))
    runs: list[Run] = []
    for name in args.profile or PROFILES:
        path = EXAMPLES / name
        config = load_config(path.read_text(), str(path), catalog=catalog_of(registry)).config
        for profile in config.profiles:
            engine = ProfileReplay(profile, config, registry, cluster, ReplayOptions(seed=args.seed))
            load_before = load_average()
            cpu = time.process_time()
            result = asyncio.run(engine.run(fleet.stream()))
            run = Run(name, result, time.process_time() - cpu, (load_before, load_average()))
            runs.append(run)
            print(
                f"{name}: {result.seconds:.1f} s wall ({run.cpu_seconds:.1f} s CPU), "
                f"{result.decisions:,} decisions, {result.decisions_per_second:,.0f}/s wall, "
                f"{run.per_cpu_second():,.0f}/s CPU ({run.per_cpu_second(generating_cpu):,.0f}/s CPU "
                f"without the generator); load {run.loads[0]:.2f} -> {run.loads[1]:.2f}; "
                f"node-minutes over target {result.node_minutes_over_target:,.0f}, "
                f"p99 node CPU {result.p99_node_cpu:.0%}, nodes in use {result.mean_nodes_in_use:,.0f}"
            )
    if args.docs:
        write_section(section(args, host.describe(), started_at, records, generating_cpu, runs))
        print(f"# written to {DOCS}")


def write_section(body: str) -> None:
    """Put ``body`` in docs/benchmarks.md's `replay` section, in place (or at the end); nothing else in
    the file changes (``bench.report.write`` would rebuild the file from its sections alone)."""
    text = DOCS.read_text()
    marked = f"<!-- section: {SECTION} -->\n{body.rstrip()}\n<!-- /section: {SECTION} -->\n"
    pattern = re.compile(rf"<!-- section: {SECTION} -->\n.*?<!-- /section: {SECTION} -->\n", re.DOTALL)
    if pattern.search(text):
        DOCS.write_text(pattern.sub(lambda _match: marked, text, count=1))
    else:
        DOCS.write_text(text.rstrip("\n") + "\n\n" + marked)


def section(
    args: argparse.Namespace,
    host: str,
    started_at: datetime.datetime,
    records: int,
    generating_cpu: float,
    runs: list[Run],
) -> str:
    header = [
        "profile",
        "decisions",
        "wall s",
        "CPU s",
        "decisions / wall s",
        "decisions / CPU s",
        "decisions / CPU s without the generator",
        "load",
    ]
    rows = [
        [
            f"`{run.config}`",
            number(run.result.decisions),
            number(run.result.seconds, 1),
            number(run.cpu_seconds, 1),
            number(run.result.decisions_per_second),
            number(run.per_cpu_second()),
            number(run.per_cpu_second(generating_cpu)),
            f"{run.loads[0]:.2f} → {run.loads[1]:.2f}",
        ]
        for run in runs
    ]
    measured = table(header, rows, "lrrrrrrr")
    command = "python -m bench.replay --docs" + "".join(
        f" --profile {run.config}" for run in runs if args.profile
    )
    slowest = min(runs, key=lambda run: run.result.decisions_per_second)
    return f"""## Replay speed

`{command}` on {started_at:%Y-%m-%d %H:%M} UTC (commit {git_commit()}), on {host}: a
generated week ({args.vms:,} VMs over {args.days:g} days, seed {args.seed}: {records:,} records,
whose generation alone took {generating_cpu:.1f} s of CPU) replayed over {args.nodes:,} generated
nodes of {NODE_SHAPE}, once per example profile (`examples/replay/`). Issue 37's target: at least
500 decisions per second at 1,000 nodes. Wall seconds depend on what else ran on the machine (the
1-minute load average, before → after each replay); CPU seconds much less so. The trace is streamed
from the generator as the replay reads it (as `secsched replay` streams a file), so the generator's
CPU is in each replay's; the last column leaves it out.

{measured}
The slowest profile here (`{slowest.config}`): {number(slowest.result.decisions_per_second)} decisions
per wall second, {number(slowest.per_cpu_second())} per CPU second,
{number(slowest.per_cpu_second(generating_cpu))} per CPU second without the generator. Where a
replay's time goes and what was done about it: [replay.md](replay.md#speed).
"""


if __name__ == "__main__":
    main()
