"""`secsched`: one entry point, one sub-command group per part of the system."""

from __future__ import annotations

import importlib
import sys

import click

from secondary_scheduler import __version__
from secondary_scheduler.cli.errors import ContractGroup
from secondary_scheduler.scheduler.options import normalise_argv

COMMANDS: dict[str, str] = {
    "cluster": "secondary_scheduler.cli.cluster_cmd:cluster",
    "config": "secondary_scheduler.cli.config_cmd:config",
    "demo": "secondary_scheduler.cli.demo_cmd:demo",
    "operator": "secondary_scheduler.cli.operator_cmd:operator",
    "scheduler": "secondary_scheduler.cli.scheduler_cmd:scheduler",
    "score": "secondary_scheduler.cli.score_cmd:score",
    "snapshot": "secondary_scheduler.cli.snapshot_cmd:snapshot",
}
"""Command name -> ``module:attribute`` of its click command, imported only when it runs.

Lazy, so that `secsched scheduler` (the image's entry point) and `secsched operator` load
neither the local cluster, the demo nor their dependencies (matplotlib, httpx).
"""


class LazyGroup(ContractGroup):
    """The root group, importing a sub-command's module only when that command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = COMMANDS[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{COMMANDS[cmd_name]} is not a click command")
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
