"""Score: how well a Guaranteed pod's requests sit in the node's NUMA zones.

Exactly scheduler-plugins' formulas (score.go, least_allocated.go, most_allocated.go,
balanced_allocation.go, least_numa.go): each zone is scored against the requests with the
chosen strategy, the node gets its lowest non-zero zone score; container scope averages
the containers' scores. LeastNUMANodes counts how many zones the kubelet would need.
Quantities are compared exactly and divided in whole units rounded up (Quantity.Value),
and the arithmetic keeps Go's integer truncation and float32/float64 types.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

import numpy as np

from secondary_scheduler.plugins.noderesourcetopology.alignment import suitable
from secondary_scheduler.plugins.noderesourcetopology.args import (
    BALANCED_ALLOCATION,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
)
from secondary_scheduler.plugins.noderesourcetopology.podresources import PodResources, value
from secondary_scheduler.plugins.noderesourcetopology.topology import (
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_CONTAINER,
    SCOPE_POD,
    NUMANode,
    TopologyManager,
)

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_DISTANCE = 255
"""ACPI SLIT's 'unknown' distance, used where a zone publishes no cost."""
GO_NAN_TO_INT64 = -(2**63)
"""What Go on amd64 makes of int64(NaN): BalancedAllocation's variance of one resource is NaN."""

Weights = Mapping[str, int]
Strategy = Callable[[Mapping[str, Decimal], Mapping[str, Decimal], Weights], int]


def weight(weights: Weights, resource: str) -> int:
    """A configured weight of 1 or more; every other resource (or weight) counts 1."""
    configured = weights.get(resource)
    return configured if configured is not None and configured >= 1 else 1


def _go_div(numerator: int, denominator: int) -> int:
    """Go's integer division (truncates toward zero)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


def _least_allocated(requested: Decimal, capacity: Decimal) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return _go_div((value(capacity) - value(requested)) * MAX_NODE_SCORE, value(capacity))


def _most_allocated(requested: Decimal, capacity: Decimal) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return _go_div(value(requested) * MAX_NODE_SCORE, value(capacity))


def _weighted(per_resource: Callable[[Decimal, Decimal], int]) -> Strategy:
    def strategy(requested: Mapping[str, Decimal], available: Mapping[str, Decimal], weights: Weights) -> int:
        total = weight_sum = 0
        for resource, quantity in requested.items():
            resource_weight = weight(weights, resource)
            total += per_resource(quantity, available.get(resource, Decimal(0))) * resource_weight
            weight_sum += resource_weight
        return _go_div(total, weight_sum) if weight_sum else 0

    return strategy


def balanced_allocation(
    requested: Mapping[str, Decimal], available: Mapping[str, Decimal], _: Weights
) -> int:
    fractions: list[float] = []
    for resource, quantity in requested.items():
        capacity = value(available.get(resource, Decimal(0)))
        fraction = 1.0 if capacity == 0 else float(value(quantity)) / float(capacity)
        if fraction > 1:
            return 0
        fractions.append(fraction)
    variance = _sample_variance(fractions)
    score = (1 - variance) * float(MAX_NODE_SCORE)
    return GO_NAN_TO_INT64 if math.isnan(score) else int(score)


def _sample_variance(values: Sequence[float]) -> float:
    """gonum's stat.Variance: compensated sum of squares over n-1 (NaN for one value)."""
    count = len(values)
    if count == 0:
        return math.nan
    mean = 0.0
    for item in values:
        mean += item
    mean /= count
    squares = compensation = 0.0
    for item in values:
        delta = item - mean
        squares += delta * delta
        compensation += delta
    unnormalised = squares - compensation * compensation / count
    return unnormalised / (count - 1) if count > 1 else math.nan


STRATEGIES: dict[str, Strategy] = {
    LEAST_ALLOCATED: _weighted(_least_allocated),
    MOST_ALLOCATED: _weighted(_most_allocated),
    BALANCED_ALLOCATION: balanced_allocation,
}


def score_each_zone(
    requested: Mapping[str, Decimal], zones: Sequence[NUMANode], strategy: Strategy, weights: Weights
) -> tuple[int, list[int]]:
    """The node's score for these requests (upstream's 'lowest non-zero' rule) and each zone's."""
    lowest = 0
    each = []
    for zone in zones:
        zone_score = strategy(requested, zone.resources, weights)
        if lowest == 0 or (zone_score != 0 and zone_score < lowest):
            lowest = zone_score
        each.append(zone_score)
    return lowest, each


def strategy_score(
    tm: TopologyManager, zones: list[NUMANode], pod: PodResources, strategy: Strategy, weights: Weights
) -> tuple[int, list[str]] | None:
    """The score under LeastAllocated/MostAllocated/BalancedAllocation; None: the policy is not scored."""
    if tm.policy != POLICY_SINGLE_NUMA_NODE:
        return None
    if tm.scope == SCOPE_POD:
        score, each = score_each_zone(pod.effective, zones, strategy, weights)
        return score, [f"pod: zones {_zone_scores(zones, each)} -> {score}"]
    if tm.scope != SCOPE_CONTAINER:
        return None
    scores: list[float] = []
    lines = []
    for container in pod.all_containers:
        score, each = score_each_zone(container.requests, zones, strategy, weights)
        scores.append(float(score))
        lines.append(f"{container.name}: zones {_zone_scores(zones, each)} -> {score}")
    mean = sum(scores) / len(scores) if scores else math.nan
    final = GO_NAN_TO_INT64 if math.isnan(mean) else int(mean)
    return final, lines


def _zone_scores(zones: Sequence[NUMANode], each: Sequence[int]) -> str:
    return ", ".join(f"{zone.id}={score}" for zone, score in zip(zones, each, strict=True))


# -- LeastNUMANodes ---------------------------------------------------------------------------


def _average_distance(zones: Sequence[NUMANode], indexes: Sequence[int]) -> np.float32:
    if not indexes:
        return np.float32(MAX_DISTANCE)
    total = 0
    for first in indexes:
        for second in indexes:
            total += zones[first].costs.get(zones[second].id, MAX_DISTANCE)
    return np.float32(total) / np.float32(len(indexes) * len(indexes))


def _combined(zones: Sequence[NUMANode], indexes: Sequence[int]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for index in indexes:
        for resource, quantity in zones[index].resources.items():
            total[resource] = total.get(resource, Decimal(0)) + quantity
    return total


def _suitable_combination(
    qos: str, zones: Sequence[NUMANode], requests: Mapping[str, Decimal], size: int
) -> tuple[tuple[int, ...] | None, bool]:
    combinations = list(itertools.combinations(range(len(zones)), size))
    best_possible = min(_average_distance(zones, c) for c in combinations)
    chosen: tuple[int, ...] | None = None
    chosen_distance = np.float32(256)
    for combination in combinations:
        if any(resource not in zones[i].resources for i in combination for resource in requests):
            continue
        combined = _combined(zones, combination)
        if not all(
            quantity == 0 or suitable(qos, resource, quantity, combined.get(resource, Decimal(0)))
            for resource, quantity in requests.items()
        ):
            continue
        distance = _average_distance(zones, combination)
        if distance == best_possible:
            return combination, True
        if distance < chosen_distance:
            chosen_distance, chosen = distance, combination
    return chosen, False


def numa_nodes_required(
    qos: str, zones: Sequence[NUMANode], requests: Mapping[str, Decimal]
) -> tuple[list[int] | None, bool]:
    """The fewest zones (their NUMA ids) the requests fit in, and whether at the best distance."""
    for size in range(1, len(zones) + 1):
        combination, best = _suitable_combination(qos, zones, requests, size)
        if combination is not None:
            return sorted(zones[i].id for i in combination), best
    return None, False


def _only_non_numa(zones: Sequence[NUMANode], requests: Mapping[str, Decimal]) -> bool:
    return not any(resource in zone.resources for resource in requests for zone in zones)


def _take_from(zones: Sequence[NUMANode], requests: Mapping[str, Decimal], numa_ids: Sequence[int]) -> None:
    """Take the requests from these zones in turn (upstream indexes zones by NUMA id)."""
    for resource, wanted in requests.items():
        for numa in numa_ids:
            if wanted == 0:
                break
            if numa >= len(zones) or resource not in zones[numa].resources:
                continue
            available = zones[numa].resources[resource]
            if wanted >= available:
                wanted -= available
                zones[numa].resources[resource] = Decimal(0)
            else:
                zones[numa].resources[resource] = available - wanted
                wanted = Decimal(0)


def _normalize(count: int, best_distance: bool, max_numa_nodes: int) -> int:
    per_zone = MAX_NODE_SCORE // max_numa_nodes
    score = MAX_NODE_SCORE - count * per_zone
    return score + per_zone // 2 if best_distance else score


def least_numa_score(
    tm: TopologyManager, zones: list[NUMANode], pod: PodResources
) -> tuple[int, list[str]] | None:
    """LeastNUMANodes (any policy); None for an unknown scope."""
    if tm.scope == SCOPE_POD:
        if _only_non_numa(zones, pod.effective):
            return MAX_NODE_SCORE, ["pod: requests no NUMA-bound resource"]
        needed, best = numa_nodes_required(pod.qos, zones, pod.effective)
        if needed is None:
            return MIN_NODE_SCORE, ["pod: fits no combination of NUMA zones"]
        score = _normalize(len(needed), best, tm.max_numa_nodes)
        return score, [f"pod: needs NUMA zones {needed}{' (best distance)' if best else ''} -> {score}"]
    if tm.scope != SCOPE_CONTAINER:
        return None
    most = 0
    all_best = True
    lines: list[str] = []
    for container in pod.all_containers:
        if _only_non_numa(zones, container.requests):
            continue
        needed, best = numa_nodes_required(pod.qos, zones, container.requests)
        if needed is None:
            return MIN_NODE_SCORE, [*lines, f"{container.name}: fits no combination of NUMA zones"]
        all_best = all_best and best
        most = max(most, len(needed))
        lines.append(f"{container.name}: needs NUMA zones {needed}{' (best distance)' if best else ''}")
        _take_from(zones, container.requests, needed)
    if most == 0:
        return MAX_NODE_SCORE, [*lines, "requests no NUMA-bound resource"]
    score = _normalize(most, all_best, tm.max_numa_nodes)
    return score, [*lines, f"at most {most} zone(s) per container -> {score}"]
