"""What the resource scorers compare: per node and scored resource, requested (with the pod) and allocatable.

A scored resource that a node does not have (allocatable 0) is left out of that node's
score, and so is an extended resource the pod does not request: otherwise every node
without GPUs would look "least allocated" for a pod that needs none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.podrequests import requests_and_non_zero
from secondary_scheduler.framework.resources import CPU, CPU_COLUMN, MEMORY, MEMORY_COLUMN, is_scalar_resource


@dataclass(frozen=True, slots=True)
class ResourceWeight:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceWeight(CPU), ResourceWeight(MEMORY))


def parse_resources(raw: Sequence[Mapping[str, Any]] | None) -> tuple[ResourceWeight, ...]:
    """The ``resources`` arg: cpu and memory (weight 1) when empty; weight 0 means 1."""
    if not raw:
        return DEFAULT_RESOURCES
    return tuple(ResourceWeight(str(item["name"]), int(item.get("weight") or 1)) for item in raw)


def pod_request_list(pod: PodInfo, resources: Sequence[ResourceWeight], *, non_zero: bool) -> tuple[int, ...]:
    """The pod's request of each scored resource; ``non_zero`` counts unset cpu/memory as 100m/200Mi."""
    defaults = {CPU: pod.non_zero_cpu, MEMORY: pod.non_zero_memory} if non_zero else {}
    return tuple(defaults.get(item.name, pod.requests.get(item.name, 0)) for item in resources)


def container_level_request_list(pod: PodInfo, resources: Sequence[ResourceWeight]) -> tuple[int, ...]:
    """``pod_request_list(non_zero=True)`` without pod-level ``spec.resources``: NodeResourcesFit's
    score, whose upstream scorer is built without the PodLevelResources gate (so it sums the
    containers even when the pod sets pod-level requests)."""
    spec = pod.obj.get("spec") or {}
    if not spec.get("resources"):
        return pod_request_list(pod, resources, non_zero=True)
    requests, (cpu, memory) = requests_and_non_zero(spec, pod_level=False)
    defaults = {CPU: cpu, MEMORY: memory}
    return tuple(defaults.get(item.name, requests.get(item.name, 0)) for item in resources)


def requested_and_allocatable(
    table: NodeTable,
    nodes: Slots,
    resources: Sequence[ResourceWeight],
    pod_requests: Sequence[int],
    *,
    non_zero: bool,
) -> tuple[IntArray, IntArray]:
    """(requested, allocatable), shape (nodes, resources); both 0 where the resource is left out."""
    requested = np.zeros((len(nodes), len(resources)), dtype=np.int64)
    allocatable = np.zeros_like(requested)
    for index, (resource, pod_request) in enumerate(zip(resources, pod_requests, strict=True)):
        column = table.resources.column(resource.name)
        if column is None or (pod_request == 0 and is_scalar_resource(resource.name)):
            continue
        if non_zero and column in (CPU_COLUMN, MEMORY_COLUMN):
            on_node = table.non_zero_requested[nodes, column]
        else:
            on_node = table.requested[nodes, column]
        allocatable[:, index] = table.allocatable[nodes, column]
        requested[:, index] = np.where(allocatable[:, index] != 0, on_node + pod_request, 0)
    return requested, allocatable


def weighted_average(scores: IntArray, weights: IntArray, counted: IntArray) -> tuple[IntArray, IntArray]:
    """(sum of score*weight, sum of weight) per node over the ``counted`` (0/1) resources."""
    return (scores * weights * counted).sum(axis=1), (weights * counted).sum(axis=1)
