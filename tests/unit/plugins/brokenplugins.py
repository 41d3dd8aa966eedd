"""Plugins that are wrong in each way a startup check must catch (used by test_plugin_loading)."""

from __future__ import annotations

from typing import Any, ClassVar

from secondary_scheduler.pluginapi import FilterPlugin, Plugin, ScorePlugin


class NotAPlugin:
    """A class that forgot the plugin bases."""

    name = "NotAPlugin"


def not_a_class() -> None:
    """An entry point that names a function."""


class NodeNameImpostor(FilterPlugin):
    """Takes an in-tree plugin's name."""

    name = "NodeName"


class DictArgs(ScorePlugin):
    """An args model that is not a pydantic model."""

    name = "DictArgs"
    args_model: ClassVar[Any] = dict


class Nameless(ScorePlugin):
    """Forgot ``name``."""


class NoExtensionPoint(Plugin):
    """Subclasses only the root base: runs nowhere."""

    name = "NoExtensionPoint"
