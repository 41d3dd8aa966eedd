"""`secsched config`: check a KubeSchedulerConfiguration before the scheduler runs with it."""

from __future__ import annotations

import sys

import click

from secondary_scheduler.cli.errors import read_input
from secondary_scheduler.cli.plugin_option import plugin_option
from secondary_scheduler.config import ConfigError, Problem, dump_config_yaml, load_config
from secondary_scheduler.plugins.registry import Registry, broken_plugins_enabled, catalog_of
from secondary_scheduler.safeyaml import MAX_CONFIG_BYTES


@click.group("config")
def config() -> None:
    """Check KubeSchedulerConfiguration files."""


@config.command("validate")
@plugin_option
@click.argument("file", type=click.Path(allow_dash=True))
def validate(registry: Registry, file: str) -> None:
    """Validate FILE, a KubeSchedulerConfiguration, and print what the scheduler would run.

    \b
    Reads apiVersion kubescheduler.config.k8s.io/v1, v1beta3, v1beta2 and v1beta1
    (older versions with a warning). FILE may be - for standard input.

    \b
    Valid: prints the effective configuration on stdout as v1 YAML, with every
    default filled in and each extension point listing exactly the plugins it runs
    (score weights included), then exits 0. Warnings go to stderr.
    Invalid: prints every error on stderr as `error: FILE:LINE: PATH: MESSAGE`, each
    with the likely fix (a misspelt or mis-indented field, a wrong type, a plugin we
    do not ship, an unsubstituted ${VARIABLE}), and exits 1. A file that cannot be
    read exits 1 too.
    """
    source = "<stdin>" if file == "-" else file
    text = read_input(file, "configuration", MAX_CONFIG_BYTES)
    try:
        result = load_config(text, source, catalog=catalog_of(registry))
    except ConfigError as error:
        _report("warning", "yellow", error.warnings, error.source)
        _report("error", "red", error.problems, error.source)
        count = len(error.problems)
        click.echo(f"{error.source}: {count} error{'s' if count != 1 else ''}", err=True)
        sys.exit(1)
    _report("warning", "yellow", result.warnings, result.source)
    enabled = [(p.scheduler_name, name) for p in result.config.profiles for name in p.enabled_plugins()]
    broken = broken_plugins_enabled(registry, enabled)
    if broken:  # an installed plugin package that cannot be imported: only its profiles fail
        for message in broken:
            click.echo(f"{click.style('error', fg='red', bold=True)}: {result.source}: {message}", err=True)
        sys.exit(1)
    click.echo(f"# Effective configuration of {result.source}, defaults filled in")
    click.echo(dump_config_yaml(result.config), nl=False)


def _report(label: str, colour: str, problems: list[Problem] | tuple[Problem, ...], source: str) -> None:
    for problem in problems:
        click.echo(f"{click.style(label, fg=colour, bold=True)}: {problem.render(source)}", err=True)
