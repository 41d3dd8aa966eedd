"""`secsched replay`: a workload replayed over a cluster in simulated time, every profile side by side."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import click
from click.decorators import FC

from secondary_scheduler.cli.config_input import load_config_or_exit
from secondary_scheduler.cli.errors import InputError, install_hint
from secondary_scheduler.cli.plugin_option import plugin_option
from secondary_scheduler.cli.score_inputs import load_snapshot
from secondary_scheduler.config.model import Profile, SchedulerConfiguration
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.plugins.registry import Registry
from secondary_scheduler.plugins.trimaran.watchermetrics import CPU, MEMORY, resource_data
from secondary_scheduler.replay.cluster import DEFAULT_NODE_SHAPE, NodeShape, StartingCluster
from secondary_scheduler.replay.engine import ProfileReplay, ReplayError, ReplayOptions
from secondary_scheduler.replay.metrics import MetricsSettings
from secondary_scheduler.replay.report import ProfileResult, print_table, report_json
from secondary_scheduler.replay.trace import ReplayRecord, Trace, TraceError, open_trace

_PLUGINS_LOGGER = "secondary_scheduler.plugins"
MAX_NODES = 100_000


def _seconds_option(flag: str, default: float, help_text: str) -> Callable[[FC], FC]:
    """A --flag taking seconds of the metrics pipeline (checked by `_check_numbers`)."""
    return click.option(flag, type=float, default=default, show_default=True, help=help_text)


@click.command("replay")
@plugin_option
@click.option("--trace", "trace_path", required=True, type=click.Path(), help="The trace to replay.")
@click.option(
    "--trace-format",
    type=click.Choice(["secsched", "azure"]),
    default="secsched",
    show_default=True,
    help="secsched: a trace file (docs/replay-inputs.md); azure: a directory of the Azure Public "
    "Dataset V2 (vmtable.csv[.gz] and vm_cpu_readings-file-*.csv[.gz]).",
)
@click.option("--snapshot", "snapshot_path", type=click.Path(), help="Start from a `secsched snapshot` file.")
@click.option("--nodes", type=int, help="Start from this many generated nodes (instead of --snapshot).")
@click.option(
    "--node-shape",
    default=DEFAULT_NODE_SHAPE,
    show_default=True,
    help="CPU,MEMORY of each generated node (Kubernetes quantities).",
)
@click.option(
    "--config",
    "config_paths",
    required=True,
    multiple=True,
    type=click.Path(),
    help="KubeSchedulerConfiguration file (repeatable); each of its profiles is replayed.",
)
@click.option("--report", "report_dir", type=click.Path(), help="Write plots and index.html here.")
@click.option("--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the framework's tie-breaking.")
@click.option(
    "--target",
    type=float,
    default=0.7,
    show_default=True,
    help="The node CPU (a fraction of capacity) the report counts nodes over.",
)
@_seconds_option(
    "--scrape-interval",
    MetricsSettings.scrape_interval,
    "Seconds between two samples of the nodes' usage (Prometheus' scrape).",
)
@_seconds_option("--metrics-lag", 0.0, "Extra seconds before a sample reaches the metric sources.")
@_seconds_option(
    "--metrics-refresh",
    MetricsSettings.refresh_interval,
    "Seconds between two fetches of the scheduler's metrics collector.",
)
@click.option(
    "--missing-nodes",
    default="",
    help="Comma-separated nodes the metric sources never report (an exporter down).",
)
def replay(
    registry: Registry,
    trace_path: str,
    trace_format: str,
    snapshot_path: str | None,
    nodes: int | None,
    node_shape: str,
    config_paths: tuple[str, ...],
    report_dir: str | None,
    output: str,
    seed: int,
    target: float,
    scrape_interval: float,
    metrics_lag: float,
    metrics_refresh: float,
    missing_nodes: str,
) -> None:
    """Replay the --trace over a cluster in simulated time, once per profile of each --config, and
    compare what each profile did: node-minutes over the target, node CPU percentiles, nodes in
    use, waits, preemptions, decisions per second.

    \b
    Every pod is scheduled by the scheduler's own framework and plugins; the load-aware plugins
    read simulated metrics (their metricProvider is served by the replay, never contacted):
    docs/replay.md says how, and what the measures mean.
    """
    plots = _plots_module() if report_dir is not None else None
    _check_numbers(target, scrape_interval, metrics_lag, metrics_refresh)
    profiles = [
        (path, config, profile)
        for path, config in _configs(config_paths, registry)
        for profile in config.profiles
    ]
    cluster = _cluster(snapshot_path, nodes, node_shape)
    names = {node["metadata"]["name"] for node in cluster.nodes}
    missing = frozenset(name.strip() for name in missing_nodes.split(",") if name.strip())
    unknown = sorted(missing - names)
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown[:5])} {'is' if len(unknown) == 1 else 'are'} not nodes of the cluster: "
            "name nodes of the --snapshot (or generated ones, node-0000...)",
            param_hint="--missing-nodes",
        )
    trace = _trace(trace_path, trace_format)
    settings = MetricsSettings(scrape_interval, metrics_lag, metrics_refresh, missing)
    options = ReplayOptions(target=target, seed=seed, metrics=settings)
    show_progress = output != "json" and sys.stderr.isatty()
    plugin_logs = logging.getLogger(_PLUGINS_LOGGER)
    level = plugin_logs.level
    plugin_logs.setLevel(logging.ERROR)  # the metrics notes would repeat for every profile
    results: list[ProfileResult] = []
    try:
        for path, config, profile in profiles:
            results.append(
                _replay_one(path, config, profile, registry, cluster, options, trace, show_progress)
            )
    finally:
        plugin_logs.setLevel(level)
    if output == "json":
        click.echo(report_json(target, results))
    else:
        print_table(target, results, trace_path, cluster.source)
    if plots is not None and report_dir is not None:
        facts = {
            "trace": f"{trace_path} ({trace_format}): {trace.header.description}",
            "cluster": cluster.source,
            "seed": str(seed),
            "metrics": f"scrape every {scrape_interval:g} s, lag {metrics_lag:g} s, collector every "
            f"{metrics_refresh:g} s, missing nodes: {', '.join(sorted(missing)) or 'none'}",
            "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        }
        page = plots.write_report(Path(report_dir), target, results, facts)
        click.echo(f"report: {page}", err=True)


def _replay_one(
    path: str,
    config: SchedulerConfiguration,
    profile: Profile,
    registry: Registry,
    cluster: StartingCluster,
    options: ReplayOptions,
    trace: Trace,
    show_progress: bool,
) -> ProfileResult:
    try:
        engine = ProfileReplay(
            profile,
            config,
            registry,
            cluster,
            options,
            epoch=trace.header.start,
            config_label=Path(path).name,
        )
        with _progress(f"{profile.scheduler_name} ({Path(path).name})", show_progress) as progress:
            return asyncio.run(engine.run(_records(trace), progress))
    except (ReplayError, TraceError) as error:
        raise click.ClickException(str(error)) from error


def _records(trace: Trace) -> Iterator[ReplayRecord]:
    try:
        yield from trace.stream()
    except OSError as error:
        raise click.ClickException(f"reading the trace: {error}") from error


class _progress:
    """A rich progress line on stderr, showing the simulated time reached (when shown at all)."""

    def __init__(self, label: str, shown: bool) -> None:
        self.label = label
        self.shown = shown
        self._bar: object = None
        self._last = 0.0

    def __enter__(self) -> Callable[[float], None] | None:
        if not self.shown:
            return None
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        bar.start()
        task = bar.add_task(self.label)
        self._bar = bar

        def advance(now: float) -> None:
            if now - self._last >= 3600 or now < self._last:
                self._last = now
                bar.update(task, description=f"{self.label}: day {now / 86400:.2f} simulated")

        return advance

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()  # type: ignore[attr-defined]


def _plots_module():  # type: ignore[no-untyped-def]
    """replay.plots, or the extra to install (matplotlib is in ``replay``)."""
    try:
        from secondary_scheduler.replay import plots
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] != "matplotlib":
            raise
        raise click.UsageError(
            "--report draws plots with matplotlib, which this installation lacks (the [replay] extra): "
            f"{install_hint('replay')} (or run without --report)"
        ) from None
    return plots


def _check_numbers(target: float, scrape: float, lag: float, refresh: float) -> None:
    if not 0 < target <= 10:
        raise click.BadParameter(
            f"{target} is not a CPU fraction: give e.g. 0.7 for 70 %", param_hint="--target"
        )
    for flag, value in (("--scrape-interval", scrape), ("--metrics-refresh", refresh)):
        if not value > 0:
            raise click.BadParameter(f"{value} is not a positive number of seconds: e.g. 30", param_hint=flag)
    if lag < 0:
        raise click.BadParameter(f"{lag} is negative: give seconds >= 0", param_hint="--metrics-lag")


def _configs(paths: tuple[str, ...], registry: Registry) -> list[tuple[str, SchedulerConfiguration]]:
    configs = []
    for path in paths:
        loaded = load_config_or_exit(path, registry)
        if loaded.config.extenders:
            raise InputError(
                path,
                "a replay does not call scheduler extenders (live HTTP services)",
                field="extenders",
                fix="replay a copy of the config without `extenders`",
            )
        configs.append((path, loaded.config))
    return configs


def _cluster(snapshot_path: str | None, nodes: int | None, node_shape: str) -> StartingCluster:
    if (snapshot_path is None) == (nodes is None):
        both = ", not both" if snapshot_path is not None else ""
        raise click.UsageError(
            "give the cluster to replay onto: --snapshot FILE (from `secsched snapshot`) or --nodes COUNT "
            f"(generated nodes of --node-shape){both}"
        )
    if nodes is not None:
        if not 1 <= nodes <= MAX_NODES:
            raise click.BadParameter(f"{nodes}: give 1 to {MAX_NODES:,} nodes", param_hint="--nodes")
        try:
            shape = NodeShape.parse(node_shape)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--node-shape") from error
        return StartingCluster.generated(nodes, shape)
    assert snapshot_path is not None
    snapshot = load_snapshot(snapshot_path)
    _warn_of_lifecycle_taints(snapshot.nodes)
    usage: dict[str, tuple[float, float]] = {}
    if snapshot.metrics is not None:
        for node in snapshot.nodes:
            name = node["metadata"]["name"]
            metrics = snapshot.metrics.node_metrics(name)
            if metrics:
                usage[name] = (resource_data(metrics, CPU).avg, resource_data(metrics, MEMORY).avg)
    return StartingCluster.from_snapshot(
        snapshot.nodes,
        snapshot.pods,
        usage,
        f"{snapshot_path} ({len(snapshot.nodes)} nodes, {len(snapshot.pods)} pods)",
        snapshot.objects,
    )


LIFECYCLE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
"""Taints the node lifecycle controller puts on a node whose kubelet does not report, and lifts
when it does again; nothing in a replay lifts them."""


def _warn_of_lifecycle_taints(nodes: list[JSON]) -> None:
    """A node caught NotReady when the snapshot was taken stays unusable for the whole replay: say so."""
    tainted = [
        node["metadata"]["name"]
        for node in nodes
        if any(taint.get("key") in LIFECYCLE_TAINTS for taint in (node.get("spec") or {}).get("taints") or ())
    ]
    if tainted:
        shown = ", ".join(tainted[:5]) + (f" and {len(tainted) - 5} more" if len(tainted) > 5 else "")
        click.echo(
            f"warning: {len(tainted)} node(s) of the snapshot carry the not-ready or unreachable taint "
            f"({shown}): the replay keeps them unschedulable throughout, as the snapshot shows them; "
            "take the snapshot again once they are Ready to replay onto them",
            err=True,
        )


def _trace(path: str, trace_format: str) -> Trace:
    if not Path(path).exists():
        raise click.BadParameter(f"{path}: no such file or directory", param_hint="--trace")
    try:
        return open_trace(Path(path), "azure" if trace_format == "azure" else "secsched")
    except (TraceError, ValueError) as error:
        raise click.BadParameter(str(error), param_hint="--trace") from error
