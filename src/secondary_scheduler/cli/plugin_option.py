"""``--plugin module:Class``: a plugin that is not installed as a package, for one command."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from secondary_scheduler.plugins.registry import PluginLoadError, default_registry, use_plugin_paths

_Command = TypeVar("_Command", bound=Callable[..., object])


def _load(_: click.Context, __: click.Parameter, paths: tuple[str, ...]) -> tuple[str, ...]:
    """Load every plugin now (installed ones too), so a broken plugin stops the command at once."""
    use_plugin_paths(paths)
    try:
        default_registry()
    except PluginLoadError as error:
        raise click.ClickException(str(error)) from error
    return paths


def plugin_option(command: _Command) -> _Command:
    """Add the repeatable ``--plugin`` option; plugins also come from installed packages' entry points."""
    return click.option(
        "--plugin",
        "plugins",
        multiple=True,
        metavar="MODULE:CLASS",
        callback=_load,
        expose_value=False,
        is_eager=True,
        help="Load a plugin class from an importable module (repeatable); installed plugin packages "
        "(entry point group secondary_scheduler.plugins) are loaded without it.",
    )(command)
