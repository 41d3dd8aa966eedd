"""`secsched`: one entry point, one sub-command group per part of the system."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

import click

from secondary_scheduler import __version__
from secondary_scheduler.cli.errors import ContractGroup
from secondary_scheduler.scheduler.options import normalise_argv


@dataclass(frozen=True)
class LazyCommand:
    target: str
    """``module:attribute`` of the click command, imported only when the command runs."""
    summary: str
    """The line `secsched --help` shows (without importing the command)."""


COMMANDS: dict[str, LazyCommand] = {
    "cluster": LazyCommand(
        "secondary_scheduler.cli.cluster_cmd:cluster", "A real Kubernetes control plane on this machine."
    ),
    "config": LazyCommand(
        "secondary_scheduler.cli.config_cmd:config", "Check KubeSchedulerConfiguration files."
    ),
    "demo": LazyCommand(
        "secondary_scheduler.cli.demo_cmd:demo", "Run the whole system here and compare it with upstream."
    ),
    "operator": LazyCommand(
        "secondary_scheduler.cli.operator_cmd:operator", "The SecondaryScheduler operator (run, render)."
    ),
    "replay": LazyCommand(
        "secondary_scheduler.cli.replay_cmd:replay",
        "Replay a workload trace over a cluster, every profile side by side.",
    ),
    "scheduler": LazyCommand("secondary_scheduler.cli.scheduler_cmd:scheduler", "Run the scheduler."),
    "score": LazyCommand(
        "secondary_scheduler.cli.score_cmd:score", "Explain one scheduling cycle over a snapshot."
    ),
    "snapshot": LazyCommand(
        "secondary_scheduler.cli.snapshot_cmd:snapshot",
        "Write a `secsched score` snapshot of a live cluster.",
    ),
    "trace": LazyCommand(
        "secondary_scheduler.cli.trace_cmd:trace", "Generate a workload trace for `secsched replay`."
    ),
}
"""Lazy, so that `secsched scheduler` (the image's entry point) and `secsched operator` load
neither the local cluster, the demo nor their dependencies (matplotlib, httpx, rich)."""

EXTRA_OF_PACKAGE = {"rich": "cli", "httpx": "cluster", "matplotlib": "demo", "kopf": "operator"}
"""Optional dependencies, and the extra of this package that installs each."""


class LazyGroup(ContractGroup):
    """The root group, importing a sub-command's module only when that command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from COMMANDS' summaries: `--help` works with only the base install."""
        rows = [(name, COMMANDS[name].summary) for name in self.list_commands(ctx) if name in COMMANDS]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = COMMANDS[cmd_name].target.partition(":")
        try:
            command = getattr(importlib.import_module(module), attribute)
        except ModuleNotFoundError as error:
            package = (error.name or "").partition(".")[0]
            if package not in EXTRA_OF_PACKAGE:
                raise
            extra = EXTRA_OF_PACKAGE[package]
            raise click.ClickException(
                f"`secsched {cmd_name}` needs {package}, which this installation lacks: "
                f"pip install 'secondary-scheduler[{extra}]'"
            ) from None
        if not isinstance(command, click.Command):
            raise TypeError(f"{COMMANDS[cmd_name].target} is not a click command")
        return command


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="secsched")
def cli() -> None:
    """A load-aware secondary scheduler for Kubernetes and OpenShift, its operator, and a
    local control plane to try them on.

    \b
    Start with `secsched cluster up` (a real local cluster), or `make demo` for the tour.
    """


def main() -> None:
    cli(args=normalise_argv(sys.argv[1:]))
