"""ScheduleAnyway constraints: prefer nodes whose domains hold fewer matching pods.

A node scores, per constraint, ``count * log(domains + 2) + maxSkew - 1``, where count is
the matching pods in its domain (on the node itself for the hostname key) and domains is
how many domains the feasible nodes span: the weight keeps constraints over many small
domains from drowning ones over a few big domains. Counting covers all nodes with every
topology label that pass the inclusion policies, but only domains some feasible node is in.
Normalization flips the sums so the emptiest node gets 100; feasible nodes lacking a
topology label are ignored and get 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.labelcolumn import LabelColumn
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import SCHEDULE_ANYWAY, PodInfo, SpreadConstraint
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.plugins.podtopologyspread.common import (
    HOSTNAME_LABEL,
    MatchingPods,
    have_all_keys,
    included,
)


@dataclass(frozen=True)
class _Weighted:
    constraint: SpreadConstraint
    column: LabelColumn
    weight: float
    counts: IntArray
    """Per domain code, plus a last 0 for nodes without the label; for the hostname key, per slot."""


@dataclass(frozen=True)
class ScoreState:
    constraints: tuple[_Weighted, ...]
    ignored: BoolArray
    """Aligned with the scored nodes: lacking a topology label, these score 0."""


def score_state(table: NodeTable, pod: PodInfo, nodes: Slots, matching: MatchingPods) -> ScoreState | None:
    """The per-domain counts, or None when the pod has no ScheduleAnyway constraint."""
    constraints = [item for item in pod.spread_constraints if item.when_unsatisfiable == SCHEDULE_ANYWAY]
    if not constraints:
        return None
    ignored = ~have_all_keys(table, nodes, constraints)
    scored = nodes[~ignored]
    everywhere = table.active_slots()
    counted_everywhere = have_all_keys(table, everywhere, constraints)
    weighted = []
    for constraint in constraints:
        column = table.label_column(constraint.topology_key)
        pods = matching.per_slot(constraint.selector)
        if constraint.topology_key == HOSTNAME_LABEL:
            weighted.append(_Weighted(constraint, column, math.log(len(scored) + 2), pods))
            continue
        domains = np.unique(column.codes[scored])
        counted = everywhere[counted_everywhere & included(table, everywhere, pod, constraint)]
        counted = counted[np.isin(column.codes[counted], domains)]
        size = len(column.values) + 1  # the last entry stays 0: it is where label code -1 lands
        counts = np.bincount(column.codes[counted], weights=pods[counted], minlength=size)
        weighted.append(_Weighted(constraint, column, math.log(len(domains) + 2), counts.astype(np.int64)))
    return ScoreState(tuple(weighted), ignored)


def _go_round(values: FloatArray) -> FloatArray:
    """Go's math.Round for non-negative values: halves round up."""
    fraction, whole = np.modf(values)
    return whole + (fraction >= 0.5)


def scores(state: ScoreState, nodes: Slots) -> IntArray:
    total = np.zeros(len(nodes))
    for item in state.constraints:
        if item.constraint.topology_key == HOSTNAME_LABEL:
            count = item.counts[nodes]
        else:
            count = item.counts[item.column.codes[nodes]]
        total += count * item.weight + (item.constraint.max_skew - 1)
    return np.where(state.ignored, 0, _go_round(total)).astype(np.int64)


def normalize(state: ScoreState, raw: IntArray) -> IntArray:
    valid = ~state.ignored
    if not valid.any():
        return np.zeros_like(raw)
    lowest = int(raw[valid].min())
    highest = max(int(raw[valid].max()), 0)
    if highest == 0:
        return np.where(valid, MAX_NODE_SCORE, 0)
    return np.where(valid, MAX_NODE_SCORE * (highest + lowest - raw) // highest, 0)
