"""`secsched score`: why a pod (a VM) would land where it lands, plugin by plugin and node by node."""

from __future__ import annotations

import json
import logging
import re
import sys

import click
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from secondary_scheduler.cli.config_input import load_config_or_exit
from secondary_scheduler.cli.errors import InputError
from secondary_scheduler.cli.plugin_option import plugin_option
from secondary_scheduler.cli.score_inputs import load_pod, load_snapshot
from secondary_scheduler.cli.score_run import CycleError, NodeReport, ScoreReport, explain
from secondary_scheduler.config.model import Profile
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.plugins.registry import Registry

DEFAULT_SCHEDULER = "default-scheduler"
"""The schedulerName the API server gives a pod that names none."""

_PLUGINS_LOGGER = "secondary_scheduler.plugins"


@click.command("score")
@plugin_option
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(),
    help="KubeSchedulerConfiguration file.",
)
@click.option(
    "--profile",
    "profile_name",
    help="schedulerName of the profile to run, even if the pod names another "
    "(default: the profile the pod's spec.schedulerName selects, as the scheduler would).",
)
@click.option(
    "--snapshot",
    "snapshot_path",
    required=True,
    type=click.Path(),
    help="YAML/JSON with nodes, pods, and optionally objects, metrics, recentlyScheduled, now "
    "(`secsched snapshot` writes one from a live cluster).",
)
@click.option(
    "--pod",
    "pod_path",
    required=True,
    type=click.Path(),
    help="The v1 Pod to place.",
)
@click.option("--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def score(
    registry: Registry,
    config_path: str,
    profile_name: str | None,
    snapshot_path: str,
    pod_path: str,
    output: str,
) -> None:
    """Run one scheduling cycle for the --pod over the --snapshot, in memory, and explain it.

    \b
    Snapshot keys:
      nodes              v1 Nodes (capacity and allocatable)
      pods               v1 Pods bound to those nodes (spec.nodeName)
      objects            other objects plugins read: PVCs, PVs, StorageClasses... (optional)
      metrics            a load-watcher WatcherMetrics object (optional)
      recentlyScheduled  [{pod: NAMESPACE/NAME or a Pod, timestamp: UNIX_SECONDS}] (optional)
      now                Unix seconds the cycle runs at (default: the metrics' timestamp)

    Metrics come from the file, never from the configured source. The profile is the
    one the pod's spec.schedulerName selects (unset: default-scheduler), as in the
    scheduler; a pod no profile schedules is refused unless --profile names one.
    Inputs are checked as the API server checks them. The table shows each plugin's score
    ("raw→normalized" when the plugin rescales it), the weighted total, why filtered-out
    nodes do not fit, and what the load-aware plugins based their scores on.
    """
    loaded = load_config_or_exit(config_path, registry)
    if loaded.config.extenders:
        click.echo(
            f"error: {loaded.source}: extenders: `score` does not call scheduler extenders (live HTTP "
            "services, not part of a snapshot), so it cannot explain this decision: explain the "
            "plugins' part with a copy of the config without `extenders`",
            err=True,
        )
        sys.exit(1)
    snapshot = load_snapshot(snapshot_path)
    pod = load_pod(pod_path)
    profile = _profile(loaded.config.profiles, profile_name, config_path, pod, pod_path)
    # The notes below say what plugins would log; their own warnings would repeat them.
    plugin_logs = logging.getLogger(_PLUGINS_LOGGER)
    level = plugin_logs.level
    plugin_logs.setLevel(logging.ERROR)
    try:
        report = explain(
            profile, snapshot, pod, loaded.config.percentage_of_nodes_to_score, registry=registry
        )
    except CycleError as error:
        raise click.ClickException(f"the scheduling cycle failed: {error}") from error
    finally:
        plugin_logs.setLevel(level)
    for kind in report.unread_kinds:
        click.echo(f"note: {snapshot_path}: objects: no enabled plugin reads {kind}; ignored", err=True)
    if output == "json":
        click.echo(json.dumps(report.as_json(), indent=2))
        for note in report.notes:
            for line in note.lines():
                click.echo(f"note: {note.plugin}: {line}", err=True)
    else:
        _print_table(report)


def _profile(
    profiles: tuple[Profile, ...], name: str | None, config_path: str, pod: JSON, pod_path: str
) -> Profile:
    """--profile if given, else the profile the pod's schedulerName selects (the scheduler's rule)."""
    by_name = {profile.scheduler_name: profile for profile in profiles}
    names = ", ".join(by_name)
    wanted = str((pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER)
    if name is not None:
        if name not in by_name:
            raise InputError(
                config_path,
                f"no profile has schedulerName {name!r}; it has {names}",
                field="profiles",
                fix="pass one of them to --profile",
            )
        if name != wanted:
            click.echo(
                f"note: {pod_path}: spec.schedulerName is {wanted!r}: the scheduler would not run profile "
                f"{name!r} for this pod; explained as if it did (--profile)",
                err=True,
            )
        return by_name[name]
    if wanted not in by_name:
        unset = "" if (pod.get("spec") or {}).get("schedulerName") else " (unset, so the API server sets it)"
        raise InputError(
            pod_path,
            f"{wanted!r}{unset} is no profile's schedulerName in {config_path} (it has {names}), "
            "so this scheduler would never schedule the pod",
            field="spec.schedulerName",
            fix="set it to one of them, or pass --profile NAME to explain that profile anyway",
        )
    return by_name[wanted]


def _print_table(report: ScoreReport, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    selected = report.selected or "none: the pod fits no node"
    console.print(
        Text.assemble(
            "Pod ",
            (report.pod, "bold"),
            " → ",
            (selected, "bold green" if report.selected else "bold red"),
            f"   (profile {report.profile})",
        )
    )
    shown, same = _split_plugins(report)
    infeasible = [node for node in report.nodes if not node.feasible]
    # The reasons are the point of a filtered-out row: in a column when the table has room for
    # each of them whole, else listed under it, where they wrap (never cut to "Insuffic…").
    reasons_in_table = bool(infeasible)
    table = _score_table(report, shown, reasons_in_table)
    unbounded = console.options.update(max_width=sys.maxsize)
    if reasons_in_table and Measurement.get(console, unbounded, table).maximum > console.width:
        reasons_in_table = False
        table = _score_table(report, shown, reasons_in_table)
    console.print(table)
    if infeasible and not reasons_in_table:
        console.print("Not feasible because:")
        for node in infeasible:
            console.print(Text.assemble("  ✗ ", (node.name, "bold"), f": {node.reason or ''}"))
    if report.message:
        console.print(Text(report.message, style="red"))
    if len(report.tied) > 1:
        console.print(f"Tie between {', '.join(report.tied)}: the scheduler picks one at random.")
    if same:
        console.print(f"Same on every feasible node: {', '.join(same)}.")
    console.print(
        Text(
            '▶ chosen, ✗ filtered out. Cells: the plugin\'s score ("raw→normalized" when it rescales it). '
            "Total = Σ normalized × weight.",
            style="dim",
        )
    )
    if report.notes:
        console.print("What plugins based their decisions on (load-aware ones: the snapshot's metrics):")
    for note in report.notes:
        console.print(Text(note.plugin, style="bold"))
        for line in note.lines():
            console.print(f"  {line}")


def _score_table(report: ScoreReport, shown: list[tuple[str, int]], with_reasons: bool) -> Table:
    """One row a node; a score column per plugin in `shown`, headers wrapped between words."""
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("")
    table.add_column("Node", no_wrap=True)
    table.add_column("Total", justify="right")
    for plugin, weight in shown:
        header = f"{_words(plugin)} ×{weight}"
        longest_word = max(len(word) for word in header.split())
        table.add_column(header, justify="right", min_width=longest_word)
    if with_reasons:
        table.add_column("Not feasible because")
    for node in report.nodes:
        table.add_row(*_row(report, node, shown, with_reasons), style=_style(report, node))
    return table


def _split_plugins(report: ScoreReport) -> tuple[list[tuple[str, int]], list[str]]:
    """Plugins whose scores tell the feasible nodes apart get a column; the others one summary line."""
    feasible = [node for node in report.nodes if node.feasible]
    if len(feasible) < 2:
        return list(report.score_plugins), []
    shown, same = [], []
    for plugin, weight in report.score_plugins:
        cells = {_cell(node, plugin) for node in feasible}
        if len(cells) > 1:
            shown.append((plugin, weight))
        else:
            same.append(f"{plugin} {cells.pop()} ×{weight}")
    return shown, same


def _words(name: str) -> str:
    """CamelCase split into words, so narrow columns wrap their headers instead of cutting them."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)


def _cell(node: NodeReport, plugin: str) -> str:
    score = node.plugins.get(plugin)
    if score is None:
        return ""
    if score.skipped:
        return "skip"
    return str(score.raw) if score.raw == score.normalized else f"{score.raw}→{score.normalized}"


def _row(report: ScoreReport, node: NodeReport, shown: list[tuple[str, int]], infeasible: bool) -> list[str]:
    marker = "▶" if node.name == report.selected else ("✗" if not node.feasible else "")
    cells = [marker, node.name, str(node.total) if node.feasible else "-"]
    cells += [_cell(node, plugin) for plugin, _weight in shown]
    if infeasible:
        cells.append(node.reason or "")
    return cells


def _style(report: ScoreReport, node: NodeReport) -> str:
    if node.name == report.selected:
        return "bold green"
    return "" if node.feasible else "dim"
