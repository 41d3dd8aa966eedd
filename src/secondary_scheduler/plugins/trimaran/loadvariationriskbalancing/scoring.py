"""LoadVariationRiskBalancing: spread risk, where risk is mean load plus its variability.

Per resource, ``risk = (mu + margin * sigma^(1/sensitivity)) / 2`` with mu the measured
load plus the pod's request and sigma the load's standard deviation, both as fractions of
capacity; the node's score is ``(1 - risk) * 100`` for its riskier resource.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.resourcestats import (
    FloatArray,
    IntArray,
    KubeObject,
    Resources,
    ResourceStats,
    allocatable,
    create_resource_stats,
    get_mu_sigma,
    node_names,
    to_scores,
)
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    CPU,
    MEMORY,
    ResourceDataArrays,
    WatcherMetrics,
    resource_data_arrays,
)


def _root(sigma: FloatArray, sensitivity: float) -> FloatArray:
    """``sigma ** (1 / sensitivity)`` as Go's math.Pow gives it; sensitivity 0 means the power +Inf.

    Go divides by zero into +Inf where Python raises, and Go's Pow returns x for the power
    1 and Sqrt(x) for 0.5, so those are taken the same way here.
    """
    if sensitivity < 0:
        return sigma
    exponent = math.inf if sensitivity == 0 else 1 / sensitivity
    if exponent == 1:
        return sigma
    if exponent == 0.5:
        return np.sqrt(sigma)
    return np.power(sigma, exponent)


def resource_scores(stats: ResourceStats, margin: float, sensitivity: float) -> FloatArray:
    """Upstream's computeScore, unrounded, for one resource on every node; 0 where capacity <= 0.

    ``margin`` and ``sensitivity`` are used as given (defaulting belongs to the args).
    """
    capacity = stats.capacity
    bounded = ResourceStats(
        used_avg=np.maximum(np.minimum(stats.used_avg, capacity), 0),
        used_stdev=np.maximum(np.minimum(stats.used_stdev, capacity), 0),
        req=np.maximum(stats.req, 0),
        capacity=capacity,
    )
    mu, sigma = get_mu_sigma(bounded)
    sigma = np.maximum(np.minimum(_root(sigma, sensitivity) * margin, 1), 0)
    risk = (mu + sigma) / 2
    return np.where(capacity > 0, (1.0 - risk) * 100, 0.0)


@dataclass(frozen=True)
class NodeArrays:
    """Per-node inputs of the score, one entry per candidate node; independent of the pod."""

    cpu_capacity: IntArray
    """Allocatable cpu, millicores."""
    memory_capacity: IntArray
    """Allocatable memory, bytes."""
    cpu: ResourceDataArrays
    memory: ResourceDataArrays


def build_node_arrays(nodes: Sequence[KubeObject], snapshot: WatcherMetrics | None) -> NodeArrays:
    """Arrays for ``score_nodes`` from raw inputs.

    ``nodes``: v1 Node dicts (``metadata.name``, ``status.allocatable``), in the order the
    scores should come back. ``snapshot``: the latest metrics, None before the first fetch.
    """
    names = node_names(nodes)
    cpu_capacity, memory_capacity = allocatable(nodes)
    return NodeArrays(
        cpu_capacity=cpu_capacity,
        memory_capacity=memory_capacity,
        cpu=resource_data_arrays(snapshot, names, CPU),
        memory=resource_data_arrays(snapshot, names, MEMORY),
    )


def score_nodes(arrays: NodeArrays, pod_request: Resources, args: LoadVariationRiskBalancingArgs) -> IntArray:
    """LoadVariationRiskBalancing's Score for every node; nodes without cpu or memory metrics score 0.

    ``pod_request`` is ``resourcestats.pod_requests`` of the pod being scheduled.
    """
    margin, sensitivity = args.safe_variance_margin, args.safe_variance_sensitivity
    cpu_stats = create_resource_stats(arrays.cpu_capacity, pod_request.milli_cpu, arrays.cpu, "cpu")
    memory_stats = create_resource_stats(arrays.memory_capacity, pod_request.memory, arrays.memory, "memory")
    cpu = np.where(arrays.cpu.valid, resource_scores(cpu_stats, margin, sensitivity), 0.0)
    memory = np.where(arrays.memory.valid, resource_scores(memory_stats, margin, sensitivity), 0.0)
    both = arrays.cpu.valid & arrays.memory.valid
    return to_scores(np.where(both, np.minimum(cpu, memory), np.maximum(cpu, memory)))
