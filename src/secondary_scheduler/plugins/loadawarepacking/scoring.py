"""LoadAwarePacking's maths, vectorised over nodes: the score and the filter of a predicted peak.

A node's predicted CPU, in percent of its capacity, once the pod runs there (``plugin.predict``
computes it per slot):

    peak (window percentile) + seasonal rise + 100 * (in-flight missing + burst margin + pod) / capacity

Score: every node that stays at or under the target scores 50-100, every node that would cross
it 49 down towards 0, falling with the predicted load however high (if all are hot, the least
hot wins): crossing always loses to fitting.
TargetLoadPacking's curve gives a node just over the target about what it gives an empty one (70
at 70 %, with target 70), so a burst lands over the target as readily as on a fresh node.
Under the target, ``score_balanced`` (the default strategy) rises as the load falls (the least
loaded node wins) and ``score_packed`` rises with the load (the fullest node that fits wins).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray

FITS_FLOOR = 50.0
"""The lowest score of a node that stays under the target; crossing nodes score below it."""
SPILL_FLOOR = 25.0
"""A packed pod that fits nowhere: nodes already over the target before it (and under the spill
ceiling with it) score 49-25, every other crossing node below 25."""
FULL_SCORE = 2.0
"""A crossing node's score at 100 %; beyond, it falls towards 0 (halved 30 points past 100 % with
target 70)."""


@dataclass(frozen=True)
class Spill:
    """Where a packed pod that fits under the target nowhere goes first: of the ``crossing`` nodes
    (indices of the scored nodes predicted over the target with the pod), ``hot`` are already over
    it without the pod; of those, the ones that stay at or under ``ceiling`` percent with it, the
    least loaded first."""

    crossing: IntArray
    hot: IntArray
    ceiling: float


def score_packed(predicted: FloatArray, target: float, spill: Spill | None = None) -> IntArray:
    """50-100 rising to the target for nodes that stay under it, 49 towards 0 beyond it; with
    ``spill``, a pod that fits nowhere goes to a node already over the target rather than push
    another one over (``_with_spill``)."""
    under = np.clip(predicted, 0.0, 100.0)
    under *= (100.0 - FITS_FLOOR) / target
    under += FITS_FLOOR
    if spill is None:
        return _with_crossing(predicted, under, target)
    if not len(spill.hot):
        return _rounded(_crossing_filled(predicted, under, target, spill.crossing))
    return _with_spill(predicted, under, target, spill)


def _with_spill(predicted: FloatArray, under: FloatArray, target: float, spill: Spill) -> IntArray:
    """The crossing order of packed pods: a node already over the target and staying at or under
    the ceiling with the pod (49-25, the least loaded first) before any node the pod would push over
    the target, or past the ceiling (the usual crossing curve, 49-2 scaled into 24-2).

    Without it, each pod that fits nowhere goes to the node it crosses least, which then crosses
    more than the next one: the last pods of a burst that fills the room under the target push one
    new node over each (live bench: the last burst's VMs, each node ending 0.1-1 core over). A node
    already over the target is over whatever comes; pushing another one over makes all of its
    pods share a node over the target too.
    """
    crossing = spill.crossing
    raw = _crossing_filled(predicted, under, target, crossing)
    before = raw[crossing]  # 49 down to 2 at 100 %, then towards 0: 49-2 into 24-2
    shrink = (SPILL_FLOOR - 1.0 - FULL_SCORE) / (FITS_FLOOR - 1.0 - FULL_SCORE)
    raw[crossing] = np.where(before > FULL_SCORE, FULL_SCORE + (before - FULL_SCORE) * shrink, before)
    load = predicted[spill.hot]
    room = load <= spill.ceiling
    span = max(spill.ceiling - target, 1.0)
    into = (load[room] - target) / span  # 0 at the target, 1 at the ceiling
    raw[spill.hot[room]] = (FITS_FLOOR - 1.0) - (FITS_FLOOR - 1.0 - SPILL_FLOOR) * into
    return _rounded(raw)


def score_balanced(predicted: FloatArray, target: float) -> IntArray:
    """100-50 falling to the target for nodes that stay under it, 49 towards 0 beyond it."""
    under = np.clip(predicted, 0.0, 100.0)
    under *= (100.0 - FITS_FLOOR) / target
    np.subtract(100.0, under, out=under)
    return _with_crossing(predicted, under, target)


def _with_crossing(predicted: FloatArray, under: FloatArray, target: float) -> IntArray:
    """``under`` where the node stays at or under the target; beyond it 49 falling steeply to
    ``FULL_SCORE`` at 100 % (which node crosses least matters most there), then on towards 0
    without reaching it: when a burst leaves every node over 100 %, a node predicted at 105 % must
    still beat one at 250 % (a floor of 0 at 100 % made them tie, and the tie was broken at random)."""
    crossing = np.flatnonzero(predicted > target)  # usually few: work on those only
    return _rounded(_crossing_filled(predicted, under, target, crossing))


def _crossing_filled(
    predicted: FloatArray, under: FloatArray, target: float, crossing: IntArray
) -> FloatArray:
    """``under`` (a fresh array of the caller's, filled in place) with the raw scores of the
    ``crossing`` nodes (the indices whose prediction is over the target)."""
    raw = under
    if len(crossing):
        load = predicted[crossing]
        span = max(100.0 - target, 1.0)
        to_full = FULL_SCORE + (FITS_FLOOR - 1.0 - FULL_SCORE) * (100.0 - np.minimum(load, 100.0)) / span
        past_full = FULL_SCORE * span / (span + np.maximum(load - 100.0, 0.0))
        raw[crossing] = np.minimum(np.where(load > 100.0, past_full, to_full), FITS_FLOOR - 1.0)
    return raw


def _rounded(raw: FloatArray) -> IntArray:
    raw += 0.5
    return np.floor(raw, out=raw).astype(np.int64)  # halves up, as Go's math.Round for x >= 0


def with_opening_cost(predicted: FloatArray, empty: BoolArray, cost: float, target: float) -> FloatArray:
    """Empty nodes as Balance should see them: ``cost`` points fuller, never past the target.

    Balance alone opens an empty node for every pod while any node in use is busier than nothing;
    with the cost, nodes in use are filled until they are ``cost`` points busier than an empty node.
    A crossing node still loses to an empty one (the cost stops at the target).
    """
    idle = np.flatnonzero(empty)  # few nodes are empty once the cluster fills: work on those only
    if cost <= 0 or not len(idle):
        return predicted
    seen = predicted[idle]
    raised = predicted.copy()
    raised[idle] = np.where(seen <= target, np.minimum(seen + cost, target), seen)
    return raised


def over_threshold(predicted: FloatArray, threshold: float) -> BoolArray:
    """The Filter's test: nodes whose predicted peak with the pod exceeds the hard threshold."""
    return predicted > threshold
