"""DoNotSchedule constraints: placing the pod must not make any domain's skew exceed maxSkew.

Skew on a node = pods matching the constraint in the node's domain + 1 if the pod matches
its own selector - the lowest count over all eligible domains. The lowest count is taken as
0 while fewer than ``minDomains`` eligible domains exist. Eligible nodes have every
constraint's topology label and pass the node inclusion policies; a candidate without the
topology label is unresolvable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.interface import Rejection
from secondary_scheduler.framework.labelcolumn import LabelColumn
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo, SpreadConstraint
from secondary_scheduler.plugins.podtopologyspread.common import (
    MatchingPods,
    have_all_keys,
    included,
)

REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = f"{REASON} (missing required label)"


@dataclass(frozen=True)
class _Domains:
    """One constraint's matching-pod count per domain (indexed by label code) and the global minimum."""

    constraint: SpreadConstraint
    column: LabelColumn
    counts: IntArray
    """Indexed by label code; the extra last entry (0) answers for nodes without the label."""
    min_match: int
    self_match: int


@dataclass(frozen=True)
class FilterState:
    domains: tuple[_Domains, ...]


def filter_state(
    table: NodeTable, pod: PodInfo, constraints: Sequence[SpreadConstraint], matching: MatchingPods
) -> FilterState:
    """The domains' counts for the pod's DoNotSchedule ``constraints`` (its own, or the defaults)."""
    if not constraints:  # most pods: PreFilter skips, and no node needs looking at
        return FilterState(())
    slots = table.active_slots()
    eligible_everywhere = have_all_keys(table, slots, constraints)
    domains = []
    for constraint in constraints:
        column = table.label_column(constraint.topology_key)
        eligible = slots[eligible_everywhere & included(table, slots, pod, constraint)]
        codes = column.codes[eligible]
        pods = matching.per_slot(constraint.selector)[eligible]
        size = len(column.values) + 1  # the last entry stays 0: it is where label code -1 lands
        counts = np.bincount(codes, weights=pods, minlength=size).astype(np.int64)
        present = np.bincount(codes, minlength=size) > 0
        enough = int(present.sum()) >= constraint.min_domains
        min_match = int(counts[present].min()) if enough else 0
        self_match = int(constraint.selector.matches(pod.labels))
        domains.append(_Domains(constraint, column, counts, min_match, self_match))
    return FilterState(tuple(domains))


def rejections(state: FilterState, candidates: Slots) -> list[Rejection]:
    """Per candidate, the first constraint it breaks decides its reason."""
    undecided = np.ones(len(candidates), dtype=np.bool_)
    missing_label = np.zeros(len(candidates), dtype=np.bool_)
    too_skewed = np.zeros(len(candidates), dtype=np.bool_)
    for domains in state.domains:
        codes = domains.column.codes[candidates]
        missing = undecided & (codes < 0)
        skew = domains.counts[codes] + domains.self_match - domains.min_match
        skewed = undecided & ~missing & (skew > domains.constraint.max_skew)
        missing_label |= missing
        too_skewed |= skewed
        undecided &= ~(missing | skewed)
    return [Rejection(missing_label, REASON_MISSING_LABEL, unresolvable=True), Rejection(too_skewed, REASON)]
