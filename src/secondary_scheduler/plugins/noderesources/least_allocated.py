"""LeastAllocated: the more of a resource stays free after placing the pod, the higher the score.

Per resource ``(allocatable - requested) * 100 / allocatable`` (0 when over-requested),
averaged with the resource weights, all in integer division as kube-scheduler does.
"""

from __future__ import annotations

import numpy as np

from secondary_scheduler.framework.aliases import IntArray
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.plugins.noderesources.resource_allocation import weighted_average


def least_allocated(requested: IntArray, allocatable: IntArray, weights: IntArray) -> IntArray:
    if allocatable.all():
        # Every node has every scored resource: no zero capacity to guard, one weight sum for all.
        free = (allocatable - requested) * MAX_NODE_SCORE // allocatable
        per_resource = np.where(requested > allocatable, 0, free)
        weights_of_all = int(weights.sum())
        if not weights_of_all:
            return np.zeros(len(per_resource), dtype=np.int64)
        return (per_resource * weights).sum(axis=1) // weights_of_all
    counted = (allocatable != 0).astype(np.int64)
    capacity = np.where(counted == 1, allocatable, 1)
    per_resource = np.where(
        requested > allocatable, 0, (allocatable - requested) * MAX_NODE_SCORE // capacity
    )
    total, weight_sum = weighted_average(per_resource, weights, counted)
    return np.where(weight_sum == 0, 0, total // np.maximum(weight_sum, 1))
