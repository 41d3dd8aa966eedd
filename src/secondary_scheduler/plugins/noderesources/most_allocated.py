"""MostAllocated (bin packing): the fuller a resource gets with the pod, the higher the score.

Per resource ``requested * 100 / allocatable``, requested capped at allocatable (pods
without requests count as 100m/200Mi and may overshoot), averaged with the weights.
"""

from __future__ import annotations

import numpy as np

from secondary_scheduler.framework.aliases import IntArray
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.plugins.noderesources.resource_allocation import weighted_average


def most_allocated(requested: IntArray, allocatable: IntArray, weights: IntArray) -> IntArray:
    counted = (allocatable != 0).astype(np.int64)
    capacity = np.where(counted == 1, allocatable, 1)
    per_resource = np.minimum(requested, allocatable) * MAX_NODE_SCORE // capacity
    total, weight_sum = weighted_average(per_resource, weights, counted)
    return np.where(weight_sum == 0, 0, total // np.maximum(weight_sum, 1))
