"""`python -m bench.chaos` (`make chaos`): faults during a burst, ours then upstream's,
then docs/reliability.md's Chaos section and a JSON of every figure."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.chaos import eventsprobe, faults
from bench.chaos.replicas import Election
from bench.chaos.report import section, write_section
from bench.chaos.run import SCHEDULER_NAME, ChaosOptions, RunResult, cluster_options, run_scheduler
from bench.machine import REPOSITORY, git_commit, machine
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM


def _names(text: str, known: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{what} {unknown or text!r}: choose from {', '.join(known)}")
    return names


def _gap(text: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH seconds, got {text!r}") from error
    if not 0 <= low <= high:
        raise argparse.ArgumentTypeError(f"expected 0 <= LOW <= HIGH, got {text!r}")
    return low, high


def parser() -> argparse.ArgumentParser:
    defaults = ChaosOptions()
    args = argparse.ArgumentParser(prog="make chaos", description=__doc__)
    args.add_argument("--nodes", type=int, default=defaults.nodes, help="KWOK nodes (default %(default)s)")
    args.add_argument(
        "--pods", type=int, default=defaults.pods, help="pods in the burst (default %(default)s)"
    )
    args.add_argument(
        "--faults",
        type=lambda text: _names(text, faults.KINDS, "fault kinds"),
        default=defaults.kinds,
        help=f"comma-separated fault kinds (default all: {','.join(faults.KINDS)})",
    )
    args.add_argument("--repeats", type=int, default=defaults.repeats, help="injections of each kind")
    args.add_argument("--seed", type=int, default=defaults.seed)
    args.add_argument(
        "--gap", type=_gap, default=defaults.gap, help="LOW,HIGH seconds between two faults (default 2,8)"
    )
    args.add_argument(
        "--duration",
        type=float,
        default=None,
        help="seconds to create the burst over (default: fits every fault)",
    )
    args.add_argument("--settle-timeout", type=float, default=defaults.settle_timeout)
    args.add_argument(
        "--events-probe-pods",
        type=int,
        default=defaults.events_probe_pods,
        help="backlog of the kill -9 Events probe (0: no probe; default %(default)s)",
    )
    args.add_argument(
        "--events-probe-repeats",
        type=int,
        default=defaults.events_probe_repeats,
        help="Events probes per scheduler (default %(default)s)",
    )
    args.add_argument(
        "--events-probe-only",
        action="store_true",
        help="only the Events probe, --events-probe-repeats times per scheduler on one cluster of "
        "--nodes, the schedulers alternating; prints each run and the median (the doc is not written)",
    )
    args.add_argument(
        "--schedulers",
        type=lambda text: _names(text, (OURS, UPSTREAM), "schedulers"),
        default=(OURS, UPSTREAM),
    )
    args.add_argument("--output", type=Path, default=REPOSITORY / "out" / "chaos", help="logs and chaos.json")
    args.add_argument(
        "--doc",
        type=Path,
        default=REPOSITORY / "docs" / "reliability.md",
        help="the page whose Chaos section is rewritten ('-': none)",
    )
    args.add_argument(
        "--from-json",
        type=Path,
        help="write the doc from a run's chaos.json instead of running (with --command, --when, --commit)",
    )
    args.add_argument("--command", help="with --from-json: the command that ran")
    args.add_argument("--when", help="with --from-json: when it ran")
    args.add_argument("--commit", help="with --from-json: the commit it ran")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    options = ChaosOptions(
        nodes=arguments.nodes,
        pods=arguments.pods,
        kinds=arguments.faults,
        repeats=arguments.repeats,
        seed=arguments.seed,
        gap=arguments.gap,
        duration=arguments.duration,
        settle_timeout=arguments.settle_timeout,
        events_probe_pods=arguments.events_probe_pods,
        events_probe_repeats=arguments.events_probe_repeats,
        operator=faults.OPERATOR_KILL in arguments.faults,
        election=Election(),
    )
    if arguments.events_probe_only:
        return _events_probe_only(arguments.schedulers, options, arguments.output)
    if arguments.from_json:
        missing = [flag for flag in ("command", "when", "commit") if not getattr(arguments, flag)]
        if missing:
            parser().error(f"--from-json needs {', '.join('--' + flag for flag in missing)} too")
        results = [RunResult.from_json(data) for data in json.loads(arguments.from_json.read_text())]
        command, when, commit = arguments.command, arguments.when, arguments.commit
    else:
        commit = git_commit()  # what runs, even if the tree moves on meanwhile
        results = [run_scheduler(kind, options, arguments.output / kind) for kind in arguments.schedulers]
        (arguments.output / "chaos.json").write_text(json.dumps([r.to_json() for r in results], indent=2))
        shown = " ".join(sys.argv[1:])
        command = "make chaos" + (f' CHAOS_ARGS="{shown}"' if shown else "")
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = section(results, options, command, machine().describe(), when, commit)
    print(text)
    if str(arguments.doc) != "-":
        write_section(arguments.doc, text)
    # Ours is what this gates; upstream's violations are reported, as what ours is measured against.
    return 1 if any(result.violations for result in results if result.scheduler == OURS) else 0


def _events_probe_only(schedulers: Sequence[str], options: ChaosOptions, output: Path) -> int:
    """The kill -9 Events probe alone, repeated: each run, the median and the mean, in events.json."""
    if options.events_probe_pods <= 0 or options.events_probe_repeats <= 0:
        raise SystemExit(
            "--events-probe-only needs --events-probe-pods > 0 and --events-probe-repeats > 0, "
            f"got {options.events_probe_pods} and {options.events_probe_repeats}"
        )
    output.mkdir(parents=True, exist_ok=True)
    commit = git_commit()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    with LocalCluster(cluster_options("chaos-events", options.nodes)) as cluster:
        results = asyncio.run(
            eventsprobe.repeated_probes(
                schedulers,
                cluster,
                repeats=options.events_probe_repeats,
                backlog_pods=options.events_probe_pods,
                share=options.events_probe_share,
                seed=options.seed,
                scheduler_name=SCHEDULER_NAME,
                directory=output,
            )
        )
    (output / "events.json").write_text(
        json.dumps({kind: [vars(probe) for probe in probes] for kind, probes in results.items()}, indent=2)
    )
    print(
        f"Events probe: `python -m bench.chaos {' '.join(sys.argv[1:])}` on {machine().describe()}, "
        f"{started}, commit `{commit}`; {options.nodes:,} nodes, backlog {options.events_probe_pods}, "
        f"killed at {options.events_probe_share:.0%} bound.\n"
    )
    print(eventsprobe.table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
