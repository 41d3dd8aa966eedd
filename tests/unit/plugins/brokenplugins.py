"""Plugins that are wrong in each way a startup check must catch (used by test_plugin_loading).

Each has exactly the fault its case is about and is otherwise a whole plugin (a Score plugin
defines ``score()``), so the check that catches it is the one the case names.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.pluginapi import (
    CycleState,
    FilterPlugin,
    Handle,
    IntArray,
    NodeTable,
    Plugin,
    PodInfo,
    Rejection,
    ScorePlugin,
    Slots,
)


class NotAPlugin:
    """A class that forgot the plugin bases."""

    name = "NotAPlugin"


def not_a_class() -> None:
    """An entry point that names a function."""


class NodeNameImpostor(FilterPlugin):
    """Takes an in-tree plugin's name (and is otherwise a whole Filter plugin, so that is its only fault)."""

    name = "NodeName"

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        return []


class DictArgs(ScorePlugin):
    """An args model that is not a pydantic model."""

    name = "DictArgs"
    args_model: ClassVar[Any] = dict

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return np.zeros(len(nodes), dtype=np.int64)


class Nameless(ScorePlugin):
    """Forgot ``name``."""

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return np.zeros(len(nodes), dtype=np.int64)


class NoExtensionPoint(Plugin):
    """Subclasses only the root base: runs nowhere."""

    name = "NoExtensionPoint"


class NeedsItsCertificate(ScorePlugin):
    """Loads fine, then refuses its environment when a profile builds it (as Trimaran's
    TargetLoadPacking does when its metricProvider.caFile is not mounted)."""

    name = "NeedsItsCertificate"

    def __init__(self, args: Any, handle: Handle) -> None:
        raise ValueError("caFile '/not-mounted/ca.crt' cannot be read: mount it, or remove caFile")

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return np.zeros(len(nodes), dtype=np.int64)
