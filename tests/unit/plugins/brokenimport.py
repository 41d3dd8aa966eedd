"""A plugin module whose own import fails, as one with a missing dependency does."""

from __future__ import annotations

import numpy as np
import secsched_dependency_that_is_not_installed  # noqa: F401

from secondary_scheduler.pluginapi import CycleState, IntArray, NodeTable, PodInfo, ScorePlugin, Slots


class NeedsMissingPackage(ScorePlugin):
    """A whole Score plugin: its only fault is the dependency its module imports."""

    name = "NeedsMissingPackage"

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return np.zeros(len(nodes), dtype=np.int64)
