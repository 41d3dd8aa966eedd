"""Score range and the normalization most score plugins share."""

from __future__ import annotations

import numpy as np

from secondary_scheduler.framework.aliases import IntArray

MIN_NODE_SCORE = 0
MAX_NODE_SCORE = 100


def default_normalize_score(scores: IntArray, *, reverse: bool) -> IntArray:
    """Scale non-negative scores so the highest becomes 100 (integer maths, as kube-scheduler).

    ``reverse`` turns counts of bad things (untolerated taints) into scores: fewest is best.
    All-zero scores stay 0, or all become 100 when reversed.
    """
    highest = int(scores.max(initial=0))
    if highest == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    normalized = MAX_NODE_SCORE * scores // highest
    return MAX_NODE_SCORE - normalized if reverse else normalized
