"""ScheduleAnyway constraints: prefer nodes whose domains hold fewer matching pods.

A node scores, per constraint, ``count * log(domains + 2) + maxSkew - 1``, where count is
the matching pods in its domain (on the node itself for the hostname key) and domains is
how many domains the feasible nodes span: the weight keeps constraints over many small
domains from drowning ones over a few big domains. Counting covers all nodes with every
topology label that pass the inclusion policies, but only domains some feasible node is in.
Normalization flips the sums so the emptiest node gets 100; feasible nodes lacking a
topology label are ignored and get 0 — except under the system default constraints, where
(as upstream) such nodes are still scored by the constraints whose label they have, and
their missing label counts as one more domain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.labelcolumn import LabelColumn
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo, SpreadConstraint
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


def score_state(
    table: NodeTable,
    pod: PodInfo,
    nodes: Slots,
    constraints: Sequence[SpreadConstraint],
    matching: MatchingPods,
    require_all_topologies: bool = True,
) -> ScoreState | None:
    """The per-domain counts for the ScheduleAnyway ``constraints``, or None when there are none.

    ``require_all_topologies`` is False only for the system defaults: nodes lacking a label
    are then scored (and counted) rather than ignored.
    """
    if not constraints:
        return None
    everywhere = table.active_slots()
    if require_all_topologies:
        ignored = ~have_all_keys(table, nodes, constraints)
        counted_everywhere = have_all_keys(table, everywhere, constraints)
    else:
        ignored = np.zeros(len(nodes), dtype=np.bool_)
        counted_everywhere = np.ones(len(everywhere), dtype=np.bool_)
    scored = nodes[~ignored]
    weighted = []
    for constraint in constraints:
        column = table.label_column(constraint.topology_key)
        pods = matching.per_slot(constraint.selector)
        if constraint.topology_key == HOSTNAME_LABEL:
            weighted.append(_Weighted(constraint, column, math.log(len(scored) + 2), pods))
            continue
        size = len(column.values) + 1  # the last entry is the domain of nodes without the label
        domains = np.unique(_domain(column, scored, size))
        counted = everywhere[counted_everywhere & included(table, everywhere, pod, constraint)]
        counted = counted[np.isin(_domain(column, counted, size), domains)]
        counts = np.bincount(_domain(column, counted, size), weights=pods[counted], minlength=size)
        weighted.append(_Weighted(constraint, column, math.log(len(domains) + 2), counts.astype(np.int64)))
    return ScoreState(tuple(weighted), ignored)


def _domain(column: LabelColumn, slots: Slots, size: int) -> IntArray:
    """The nodes' domain codes, nodes without the label in the last one."""
    codes = column.codes[slots]
    return np.where(codes < 0, size - 1, codes)


def _go_round(values: FloatArray) -> FloatArray:
    """Go's math.Round for non-negative values: halves round up."""
    fraction, whole = np.modf(values)
    return whole + (fraction >= 0.5)


def scores(state: ScoreState, nodes: Slots) -> IntArray:
    total = np.zeros(len(nodes))
    for item in state.constraints:
        codes = item.column.codes[nodes]
        count = item.counts[nodes] if item.constraint.topology_key == HOSTNAME_LABEL else item.counts[codes]
        # A node without the constraint's label gets nothing from it (only possible with the
        # system defaults: otherwise such nodes are ignored altogether).
        total += np.where(codes >= 0, count * item.weight + (item.constraint.max_skew - 1), 0)
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
