"""Run one plugin's extension points the way the framework would, with readable results."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from secondary_scheduler.framework import CycleState, NodeTable, PodInfo, Status
from secondary_scheduler.framework.interface import (
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from secondary_scheduler.framework.status import Code


def rejections(plugin: FilterPlugin, pod: PodInfo, table: NodeTable) -> dict[str, list[str]]:
    """Rejected node -> reasons (unresolvable ones suffixed with " [unresolvable]"); PreFilter runs first."""
    state = CycleState()
    candidates = table.active_slots()
    rejected: dict[str, list[str]] = defaultdict(list)
    if isinstance(plugin, PreFilterPlugin):
        status = plugin.pre_filter(state, pod, table)
        if isinstance(status, PreFilterResult):  # the nodes left out are not filtered
            for slot in candidates.tolist():
                if table.names[slot] not in status.node_names:
                    rejected[table.names[slot]].append(f"node(s) didn't satisfy plugin(s) [{plugin.name}]")
            candidates = np.array(
                [s for s in candidates if table.names[s] in status.node_names], dtype=np.intp
            )
        elif status.is_skip:
            return {}
        else:
            assert status.is_success, status
    for mask, reason, unresolvable in plugin.filter(state, pod, table, candidates):
        assert len(mask) == len(candidates)
        for slot in candidates[np.asarray(mask, dtype=bool)]:
            rejected[table.names[slot]].append(reason + (" [unresolvable]" if unresolvable else ""))
    return dict(rejected)


def scores(
    plugin: ScorePlugin, pod: PodInfo, table: NodeTable, nodes: list[str] | None = None
) -> dict[str, int]:
    """Normalized scores of ``nodes`` (default: all), after PreScore; {} when PreScore skips."""
    return raw_and_normalized(plugin, pod, table, nodes)[1]


def raw_and_normalized(
    plugin: ScorePlugin, pod: PodInfo, table: NodeTable, nodes: list[str] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    state = CycleState()
    names = nodes if nodes is not None else [table.names[slot] for slot in table.active_slots()]
    slots = np.array([table.slot_of(name) for name in names], dtype=np.intp)
    if isinstance(plugin, PreScorePlugin):
        status: Status = plugin.pre_score(state, pod, table, slots)
        if status.code == Code.SKIP:
            return {}, {}
        assert status.is_success, status
    raw = plugin.score(state, pod, table, slots)
    normalized = plugin.normalize(state, pod, raw.copy())
    return dict(zip(names, raw.tolist(), strict=True)), dict(zip(names, normalized.tolist(), strict=True))
