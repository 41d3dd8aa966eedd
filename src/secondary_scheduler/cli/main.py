"""`secsched`: one entry point, one sub-command group per part of the system."""

from __future__ import annotations

import sys

import click

from secondary_scheduler import __version__
from secondary_scheduler.cli.errors import ContractGroup
from secondary_scheduler.scheduler.options import normalise_argv


@click.group(
    cls=ContractGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="secsched")
def cli() -> None:
    """A load-aware secondary scheduler for Kubernetes and OpenShift, its operator, and a
    local control plane to try them on.

    \b
    Start with `secsched cluster up` (a real local cluster), or `make demo` for the tour.
    """


def _register() -> None:
    # Each group lives in its own module; importing them here keeps start-up in one place.
    from secondary_scheduler.cli import cluster_cmd
    from secondary_scheduler.cli.config_cmd import config
    from secondary_scheduler.cli.demo_cmd import demo
    from secondary_scheduler.cli.operator_cmd import operator
    from secondary_scheduler.cli.scheduler_cmd import scheduler
    from secondary_scheduler.cli.score_cmd import score
    from secondary_scheduler.cli.snapshot_cmd import snapshot

    cli.add_command(cluster_cmd.cluster)
    cli.add_command(config)
    cli.add_command(demo)
    cli.add_command(score)
    cli.add_command(snapshot)
    cli.add_command(operator)
    cli.add_command(scheduler)


_register()


def main() -> None:
    cli(args=normalise_argv(sys.argv[1:]))
