"""`secsched`: one entry point, one sub-command group per part of the system."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

import click

from secondary_scheduler import __version__
from secondary_scheduler.cli.errors import ContractGroup, missing_devtools, missing_extra
from secondary_scheduler.scheduler.options import normalise_argv

DEVTOOLS_PACKAGE = "secsched_devtools"
"""The dev tooling's import package (devtools/ of the repository, distribution
secondary-scheduler-devtools; never in the images). The runtime package's one door to it is
COMMANDS' `cluster` and `demo` targets below, imported by name when one of them runs: no module
of secondary_scheduler imports it (tests/unit/test_import_graph.py)."""


@dataclass(frozen=True)
class LazyCommand:
    target: str
    """``module:attribute`` of the click command, imported only when the command runs."""
    summary: str
    """The line `secsched --help` shows (without importing the command)."""
    devtools: bool = False
    """Whether the command lives in the dev tooling's package (DEVTOOLS_PACKAGE), which an
    installation may lack: then running it says which package to install."""


COMMANDS: dict[str, LazyCommand] = {
    "scheduler": LazyCommand("secondary_scheduler.cli.scheduler_cmd:scheduler", "Run the scheduler."),
    "operator": LazyCommand(
        "secondary_scheduler.cli.operator_cmd:operator", "The SecondaryScheduler operator (run, render)."
    ),
    "config": LazyCommand(
        "secondary_scheduler.cli.config_cmd:config", "Check KubeSchedulerConfiguration files."
    ),
    "score": LazyCommand(
        "secondary_scheduler.cli.score_cmd:score", "Explain one scheduling cycle over a snapshot."
    ),
    "snapshot": LazyCommand(
        "secondary_scheduler.cli.snapshot_cmd:snapshot",
        "Write a `secsched score` snapshot of a live cluster.",
    ),
    "replay": LazyCommand(
        "secondary_scheduler.cli.replay_cmd:replay",
        "Replay a workload trace, every profile side by side.",
    ),
    "trace": LazyCommand(
        "secondary_scheduler.cli.trace_cmd:trace", "Generate a workload trace for `secsched replay`."
    ),
    "cluster": LazyCommand(
        f"{DEVTOOLS_PACKAGE}.cluster.command:cluster",
        "Dev tooling: a real Kubernetes control plane here.",
        devtools=True,
    ),
    "demo": LazyCommand(
        f"{DEVTOOLS_PACKAGE}.demo.command:demo",
        "Dev tooling: the whole system here, against upstream.",
        devtools=True,
    ),
}
"""In the order `secsched --help` lists them: what a user runs first, the dev tooling last.
Lazy, so that `secsched scheduler` (the image's entry point) and `secsched operator` load
neither the local cluster, the demo nor their dependencies (matplotlib, httpx, rich)."""


class LazyGroup(ContractGroup):
    """The root group, importing a sub-command's module only when that command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """COMMANDS in their order (not the alphabet's), then any added to the group directly."""
        return [*COMMANDS, *sorted(set(super().list_commands(ctx)) - set(COMMANDS))]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from COMMANDS' summaries: `--help` works with only the base install."""
        rows = [(name, COMMANDS[name].summary) for name in self.list_commands(ctx) if name in COMMANDS]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        spec = COMMANDS[cmd_name]
        module, _, attribute = spec.target.partition(":")
        try:
            command = getattr(importlib.import_module(module), attribute)
        except ModuleNotFoundError as error:
            if spec.devtools and (error.name or "").partition(".")[0] == DEVTOOLS_PACKAGE:
                raise missing_devtools(cmd_name) from None
            friendly = missing_extra(error, cmd_name)
            if friendly is None:
                raise
            raise friendly from None
        if not isinstance(command, click.Command):
            raise TypeError(f"{spec.target} is not a click command")
        return command


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="secsched")
def cli() -> None:
    """A load-aware secondary scheduler for Kubernetes and OpenShift, its operator, and a
    local control plane to try them on.

    \b
    Check a configuration:  secsched config validate FILE
    See what it decides:    secsched score --config FILE --snapshot S --pod P
    Run it:                 secsched scheduler --config FILE --kubeconfig K
    `cluster` and `demo` are dev tooling (from a clone: its devtools/ package).
    """


def main() -> None:
    cli(args=normalise_argv(sys.argv[1:]))
