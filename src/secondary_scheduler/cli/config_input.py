"""The configuration an in-memory run (`secsched score`, `replay`) reads, loaded as the scheduler would.

Both commands report a bad file the same way: every problem on stderr, then exit 1, so one
run shows all that needs fixing; warnings are shown and the run goes on.
"""

from __future__ import annotations

import sys

import click

from secondary_scheduler.cli.errors import read_input
from secondary_scheduler.config import ConfigError, LoadResult, load_config
from secondary_scheduler.plugins.registry import Registry, catalog_of
from secondary_scheduler.safeyaml import MAX_CONFIG_BYTES


def load_config_or_exit(path: str, registry: Registry) -> LoadResult:
    """The configuration in `path` with the `registry`'s plugins; exits 1 after echoing its problems."""
    try:
        text = read_input(path, "configuration", MAX_CONFIG_BYTES)
        loaded = load_config(text, path, catalog=catalog_of(registry))
    except ConfigError as error:
        for problem in error.problems:
            click.echo(f"error: {problem.render(error.source)}", err=True)
        sys.exit(1)
    for warning in loaded.warnings:
        click.echo(f"warning: {warning.render(loaded.source)}", err=True)
    return loaded
