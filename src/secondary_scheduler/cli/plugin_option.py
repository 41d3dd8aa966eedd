"""``--plugin module:Class``, and the plugin registry the command runs with.

The option hands the command its registry (parameter ``registry``): the in-tree plugins,
installed packages' entry points and the ``--plugin`` classes, loaded once, when the
command starts, so a broken plugin stops it at once with a message naming the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import click

from secondary_scheduler.plugins.registry import PluginLoadError, Registry, load_registry

_Command = TypeVar("_Command", bound=Callable[..., object])


def registry_or_exit(paths: Iterable[str] = ()) -> Registry:
    """``load_registry(paths)``; a plugin that cannot be used ends the command (exit 1, the reason)."""
    try:
        return load_registry(paths)
    except PluginLoadError as error:
        raise click.ClickException(str(error)) from error


def _load(_: click.Context, __: click.Parameter, paths: tuple[str, ...]) -> Registry:
    return registry_or_exit(paths)


def plugin_option(command: _Command) -> _Command:
    """Add the repeatable ``--plugin`` option; the command receives the registry as ``registry``."""
    return click.option(
        "--plugin",
        "registry",
        multiple=True,
        metavar="MODULE:CLASS",
        callback=_load,
        is_eager=True,
        help="Load a plugin class from an importable module (repeatable); installed plugin packages "
        "(entry point group secondary_scheduler.plugins) are loaded without it.",
    )(command)
