"""What a node's rise in mean *and* variance says the pods just placed on it use.

A window's mean shows a pod bound ``a`` seconds before its end at ``a / S`` of its use, ``S``
being how much data the window really holds. ``S`` is the nominal window (15m) only where the
source has that much history: a fresh Prometheus, a new node or a renamed series hold less,
and then a mean read as if it were 15 minutes long teaches a share that is wrong by the ratio.
The variance tells the two apart: pods that started inside the window make the node's series a
staircase, and the staircase's variance against its mean rise fixes ``S``::

    q_i = clip(a_i / S, 0, 1)              share of the window pod i has been running for
    rise of the mean      m  = r * sum_i e_i q_i
    rise of the variance  s2 = r^2 * (sum_ij e_i e_j min(q_i, q_j) - (sum_i e_i q_i)^2)

with ``e_i`` the current estimates and ``r`` what the pods really use per estimated millicore.
``s2 / m^2`` depends on ``S`` alone and grows with it: the ``S`` that matches it gives ``r``.
With one step this is ``use = m + s2 / m`` whatever ``S`` is. So a class is learned from the
first snapshot that holds its pods, not a whole window later.
"""

from __future__ import annotations

import numpy as np

from secondary_scheduler.framework.aliases import FloatArray

_SPANS = 128
"""Window lengths tried between the oldest pod's age and the nominal window (log-spaced)."""


def observed_use(
    estimates: FloatArray, ages: FloatArray, mean_rise: float, variance_rise: float, nominal_span: float
) -> float | None:
    """Millicores the pods use in all, from the node's mean and variance rise (millicores, and
    millicores squared) since before them; None when the rise says nothing (no rise, no pods in
    the window yet). ``ages``: seconds each pod has shown in the source (0 or less: not yet)."""
    oldest = float(ages.max()) if len(ages) else 0.0
    if mean_rise <= 0 or oldest <= 0:
        return None
    longest = max(nominal_span, oldest)
    spans = np.geomspace(oldest, longest, _SPANS) if longest > oldest else np.array([oldest])
    shares = np.clip(ages[None, :] / spans[:, None], 0.0, 1.0)  # (spans, pods)
    shown = shares @ estimates  # sum_i e_i q_i per span
    overlap = np.minimum(shares[:, :, None], shares[:, None, :])  # min(q_i, q_j)
    square = np.einsum("i,sij,j->s", estimates, overlap, estimates)
    spread = np.maximum(square - shown**2, 0.0) / np.maximum(shown, 1e-9) ** 2
    wanted = max(variance_rise, 0.0) / mean_rise**2
    # The spread grows with the span: interpolate where it meets the measured one. Beyond the
    # longest span, more variance than the pods explain is the node's own: take the longest
    # (the lowest share shown, the highest use: the safe side); below the shortest, the shortest.
    at = float(np.interp(wanted, spread, shown)) if len(spans) > 1 else float(shown[0])
    return float(mean_rise / at * estimates.sum())
