"""RequestedToCapacityRatio: a user-drawn score curve over utilization.

``shape`` points (utilization 0..100, score 0..10) define a piecewise-linear function;
scores are scaled by 10 to the 0..100 range. Each resource's utilization with the pod
(100 when over-requested) is mapped through it; resources scoring 0 are left out of the
weighted average, which is rounded half away from zero. Integer divisions truncate toward
zero, as Go's do, which matters on descending segments.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from secondary_scheduler.framework.aliases import IntArray
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.plugins.noderesources.resource_allocation import weighted_average

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

ShapePoint = tuple[int, int]
"""(utilization, score) with score already scaled to 0..100."""


def scaled_shape(points: Sequence[tuple[int, int]]) -> tuple[ShapePoint, ...]:
    """The configured (utilization, 0..10 score) points, with scores scaled to 0..100."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple((utilization, score * factor) for utilization, score in points)


def _truncating_divide(numerator: IntArray, denominator: int) -> IntArray:
    """Go's integer division (toward zero) for a positive denominator."""
    return np.sign(numerator) * (np.abs(numerator) // denominator)


def broken_linear(shape: Sequence[ShapePoint], utilization: IntArray) -> IntArray:
    """The shape's piecewise-linear function at each utilization (flat outside the points)."""
    result = np.full(utilization.shape, shape[-1][1], dtype=np.int64)
    for index in reversed(range(len(shape))):
        point_utilization, point_score = shape[index]
        if index == 0:
            value = np.full(utilization.shape, point_score, dtype=np.int64)
        else:
            previous_utilization, previous_score = shape[index - 1]
            rise = (point_score - previous_score) * (utilization - previous_utilization)
            value = previous_score + _truncating_divide(rise, point_utilization - previous_utilization)
        result = np.where(utilization <= point_utilization, value, result)
    return result


def requested_to_capacity_ratio(
    requested: IntArray, allocatable: IntArray, weights: IntArray, shape: Sequence[ShapePoint]
) -> IntArray:
    available = allocatable != 0
    capacity = np.where(available, allocatable, 1)
    utilization = np.where(requested > allocatable, MAX_UTILIZATION, requested * MAX_UTILIZATION // capacity)
    per_resource = broken_linear(shape, utilization)
    counted = (available & (per_resource > 0)).astype(np.int64)
    total, weight_sum = weighted_average(per_resource, weights, counted)
    safe_sum = np.maximum(weight_sum, 1)
    rounded = (2 * total + safe_sum) // (2 * safe_sum)  # total/weight_sum rounded half up (both are >= 0)
    return np.where(weight_sum == 0, 0, rounded)
