"""`secsched trace`: write the workload files `secsched replay` reads (docs/replay-inputs.md).

`trace generate` writes a generated VM fleet (replay/generate.py) as a secsched trace file, so
that one file can be replayed, shared and diffed; `replay` can also generate in memory.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pydantic
import yaml

from secondary_scheduler.cli.errors import InputError
from secondary_scheduler.replay.generate import FleetOptions, FleetTrace
from secondary_scheduler.replay.record import (
    RecordError,
    RecordOptions,
    parse_duration,
    prometheus_source,
    record_to_file,
)
from secondary_scheduler.replay.trace import PodArrival, TraceRecord, write_trace

if TYPE_CHECKING:
    from secondary_scheduler.kube.kubeconfig import Connection
    from secondary_scheduler.plugins.trimaran.source import MetricSource

PROGRESS_EVERY = 20000
"""Records between two progress-bar updates (each update costs more than a record)."""


@click.group("trace")
def trace() -> None:
    """Workload traces for `secsched replay`: generate one (see docs/replay-inputs.md)."""


@trace.command("generate")
@click.option(
    "--vms", type=int, default=FleetOptions().vms, show_default=True, help="VMs created over the trace."
)
@click.option(
    "--days", type=float, default=FleetOptions().days, show_default=True, help="Length of the trace."
)
@click.option("--seed", type=int, default=0, show_default=True, help="The same seed writes the same file.")
@click.option(
    "--sample-interval",
    type=float,
    default=FleetOptions().sample_interval,
    show_default=True,
    help="Seconds between a VM's usage samples.",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="OPTION=VALUE",
    help="Any other statistic of the generator (repeatable), e.g. --set diurnal_amplitude=0.3 "
    "--set 'instance_types={u1.medium: 1, cx1.large: 1}'; the options are listed in docs/replay-inputs.md.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    required=True,
    help="The trace file to write (gzipped if it ends in .gz).",
)
def generate(
    vms: int, days: float, seed: int, sample_interval: float, settings: tuple[str, ...], output: str
) -> None:
    """Write a generated VM fleet as a secsched trace.

    \b
    Example: a week of 10,000 VMs (~20 million usage samples, a few minutes):
      secsched trace generate --vms 10000 --days 7 --seed 0 --output week.jsonl.gz
    """
    values: dict[str, Any] = {"vms": vms, "days": days, "seed": seed, "sample_interval": sample_interval}
    for setting in settings:
        name, equals, text = setting.partition("=")
        if not equals or not name.strip():
            raise click.BadParameter(f"{setting!r} is not OPTION=VALUE", param_hint="'--set'")
        try:
            values[name.strip()] = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise click.BadParameter(
                f"{setting!r}: the value is not YAML ({error})", param_hint="'--set'"
            ) from None
    try:
        options = FleetOptions(**values)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InputError(
            "--set"
            if field not in ("vms", "days", "seed", "sample_interval")
            else f"--{field.replace('_', '-')}",
            f"{field}={first.get('input')!r}: {first['msg']}",
            fix="see `secsched trace generate --help` and docs/replay-inputs.md for the options",
        ) from None
    fleet = FleetTrace(options)
    path = Path(output)
    counts = {"pods": 0, "samples": 0}
    try:
        written = write_trace(path, fleet.header, _with_progress(fleet.records(), options.duration, counts))
    except OSError as error:
        raise InputError(output, f"cannot be written ({error.strerror or error})") from error
    click.echo(
        f"trace: {counts['pods']:,} pods, {counts['samples']:,} usage samples ({written:,} records) over "
        f"{options.days:g} days, seed {options.seed} -> {output} ({path.stat().st_size / 2**20:.1f} MiB)",
        err=True,
    )


def _with_progress(records: Any, duration: float, counts: dict[str, int]) -> Any:
    """The records, passed on, with a progress bar over simulated time."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (
        TextColumn("generating"),
        BarColumn(),
        TextColumn("day {task.fields[day]:.1f}"),
        TextColumn("{task.fields[records]:,} records"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task("generate", total=duration, day=0.0, records=0)
        record: TraceRecord
        for number, record in enumerate(records, start=1):
            if type(record) is PodArrival:
                counts["pods"] += 1
            else:
                counts["samples"] += 1
            if number % PROGRESS_EVERY == 0:
                progress.update(task, completed=record.t, day=record.t / 86400, records=number)
            yield record
        progress.update(task, completed=duration)


@dataclass(frozen=True)
class HistoryPlan:
    """What `secsched snapshot --history` is to record, checked before the snapshot is taken."""

    history: str
    options: RecordOptions
    prometheus: str | None
    trace_path: Path


def plan_history(
    history: str | None,
    step: str | None,
    prometheus: str | None,
    trace_path: str | None,
    snapshot_output: str,
    namespaces: tuple[str, ...],
) -> HistoryPlan | None:
    """The --history flags read and checked (None without --history; its companions refused then)."""
    if history is None:
        flags = (("--history-step", step), ("--prometheus", prometheus), ("--trace", trace_path))
        given = [flag for flag, value in flags if value]
        if given:
            raise click.UsageError(
                f"{', '.join(given)} only apply with --history DURATION: add it, or drop them"
            )
        return None
    if trace_path is None:
        if snapshot_output == "-":
            raise click.UsageError(
                "--history writes a trace file: give --trace PATH (the snapshot goes to stdout)"
            )
        trace_path = str(Path(snapshot_output).with_suffix("")) + ".trace.jsonl.gz"
    seconds = {}
    for flag, text in (("--history", history), ("--history-step", step or "1m")):
        try:
            seconds[flag] = parse_duration(text)
        except ValueError as error:
            raise click.BadParameter(
                f"{text!r}: {error} (e.g. 90s, 30m, 12h, 7d)", param_hint=f"'{flag}'"
            ) from None
    try:
        options = RecordOptions(
            history=seconds["--history"], step=seconds["--history-step"], namespaces=namespaces
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    return HistoryPlan(history, options, prometheus, Path(trace_path))


def record_history(connection: Connection, configured: list[MetricSource], plan: HistoryPlan | None) -> None:
    """`secsched snapshot --history`: record the past into a trace beside the snapshot."""
    if plan is None:
        return
    try:
        source = prometheus_source(plan.prometheus, configured)
        recording = asyncio.run(record_to_file(connection, source, plan.options, plan.trace_path))
    except RecordError as error:
        raise click.ClickException(str(error)) from None
    except OSError as error:
        raise InputError(str(plan.trace_path), f"cannot be written ({error.strerror or error})") from error
    samples = sum(len(times) for times, _, _ in recording.samples.values())
    left_out = len(recording.left_out)
    click.echo(
        f"trace: {len(recording.arrivals)} pods, {samples:,} usage samples over {plan.history} "
        f"from {source.address}"
        + (f" ({left_out} deleted pods without recorded requests left out)" if left_out else "")
        + f" -> {plan.trace_path}",
        err=True,
    )
