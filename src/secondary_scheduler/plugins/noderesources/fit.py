"""NodeResourcesFit: the pod's requests must fit what is left of each node's allocatable.

Filter: a node fails with "Too many pods" when it is at its pod limit, and with
"Insufficient <resource>" for every requested resource the node lacks; when the pod asks
for more than the node's whole allocatable, no preemption could help, so that node's
status is UnschedulableAndUnresolvable. Resources the pod requests 0 of are not checked;
extended resources listed in ``ignoredResources`` (or whose domain is in
``ignoredResourceGroups``) are not checked either.

Score: the ``scoringStrategy`` (LeastAllocated by default, MostAllocated,
RequestedToCapacityRatio) over its ``resources`` (cpu and memory, weight 1), using the
non-zero requests for cpu and memory. As upstream's, the score counts the pod's containers
(and overhead) only, not pod-level ``spec.resources``: kube-scheduler builds Fit's scorer
without its PodLevelResources gate (NodeResourcesBalancedAllocation's has it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.args import args_mapping
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PodPredicate,
    PreFilterPlugin,
    PreScorePlugin,
    Rejection,
    ScorePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS_COLUMN,
    is_extended_resource,
    is_scalar_resource,
)
from secondary_scheduler.framework.status import SUCCESS, Status
from secondary_scheduler.plugins.noderesources.args import NodeResourcesFitArgs
from secondary_scheduler.plugins.noderesources.least_allocated import least_allocated
from secondary_scheduler.plugins.noderesources.most_allocated import most_allocated
from secondary_scheduler.plugins.noderesources.requested_to_capacity_ratio import (
    requested_to_capacity_ratio,
    scaled_shape,
)
from secondary_scheduler.plugins.noderesources.resource_allocation import (
    ResourceWeight,
    container_level_request_list,
    parse_resources,
    requested_and_allocatable,
)

TOO_MANY_PODS = "Too many pods"
_CHECK_ORDER = {CPU: 0, MEMORY: 1, EPHEMERAL_STORAGE: 2}
_ONE_TRUE = np.ones(1, dtype=np.bool_)
"""The mask of a one-node filter that rejects its node."""
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_PRE_FILTER_KEY = "PreFilterNodeResourcesFit"
_PRE_SCORE_KEY = "PreScoreNodeResourcesFit"

Scorer = Callable[[IntArray, IntArray, IntArray], IntArray]
"""(requested, allocatable, weights) -> score per node."""


@dataclass(frozen=True)
class _CheckedRequests:
    """The requests Filter checks: (resource, amount), ignored and zero requests left out."""

    items: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class _ScoredRequests:
    amounts: tuple[int, ...]


def _scorer(strategy: Mapping[str, Any]) -> Scorer:
    kind = strategy.get("type") or LEAST_ALLOCATED
    if kind == LEAST_ALLOCATED:
        return least_allocated
    if kind == MOST_ALLOCATED:
        return most_allocated
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        points = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or ()
        if not points:
            raise ValueError(
                "NodeResourcesFit: RequestedToCapacityRatio needs requestedToCapacityRatio.shape"
            )
        shape = scaled_shape([(int(point["utilization"]), int(point["score"])) for point in points])
        return lambda requested, allocatable, weights: requested_to_capacity_ratio(
            requested, allocatable, weights, shape
        )
    raise ValueError(f"NodeResourcesFit: unknown scoring strategy {kind!r}")


class Fit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "NodeResourcesFit"
    reads_node_pods: ClassVar[bool] = False
    args_model = NodeResourcesFitArgs

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Room appears when an assigned pod goes or shrinks, or a node comes or grows."""
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)),
        )

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        raw = args_mapping(args)
        self.ignored_resources = frozenset(raw.get("ignoredResources") or ())
        self.ignored_groups = frozenset(raw.get("ignoredResourceGroups") or ())
        strategy = raw.get("scoringStrategy") or {}
        self.resources: tuple[ResourceWeight, ...] = parse_resources(strategy.get("resources"))
        self._weights = np.array([resource.weight for resource in self.resources], dtype=np.int64)
        self._scorer = _scorer(strategy)

    def _is_ignored(self, resource: str) -> bool:
        return is_extended_resource(resource) and (
            resource in self.ignored_resources or resource.split("/")[0] in self.ignored_groups
        )

    def _checked_requests(self, pod: PodInfo) -> _CheckedRequests:
        """The requests to check, in upstream's order (cpu, memory, ephemeral-storage, then the
        others): a node's reasons read "Insufficient cpu, Insufficient memory" as kube-scheduler's."""
        checked = [
            (resource, amount)
            for resource, amount in pod.requests.items()
            if amount > 0
            and (resource in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(resource))
            and not self._is_ignored(resource)
        ]
        checked.sort(key=lambda item: (_CHECK_ORDER.get(item[0], len(_CHECK_ORDER)), item[0]))
        return _CheckedRequests(tuple(checked))

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        state.write(_PRE_FILTER_KEY, self._checked_requests(pod))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        checked = state.read(_PRE_FILTER_KEY, _CheckedRequests) or self._checked_requests(pod)
        if len(candidates) == 1:
            return self._filter_one_node(checked, table, int(candidates[0]))
        full = table.pod_count[candidates] + 1 > table.allocatable[candidates, PODS_COLUMN]
        rejections = [Rejection(full, TOO_MANY_PODS)]
        none = np.zeros(len(candidates), dtype=np.int64)
        for resource, amount in checked.items:
            column = table.resources.column(resource)  # None: no node or pod has mentioned it yet
            allocatable = none if column is None else table.allocatable[candidates, column]
            in_use = none if column is None else table.requested[candidates, column]
            short = amount > allocatable - in_use
            beyond = amount > allocatable
            reason = f"Insufficient {resource}"
            rejections += [Rejection(short & beyond, reason, True), Rejection(short & ~beyond, reason)]
        return rejections

    @staticmethod
    def _filter_one_node(checked: _CheckedRequests, table: NodeTable, slot: int) -> list[Rejection]:
        """``filter`` on one node with plain integers (preemption's dry run asks node by node)."""
        allocatable = table.allocatable[slot].tolist()
        requested = table.requested[slot].tolist()
        rejections = []
        if int(table.pod_count[slot]) + 1 > allocatable[PODS_COLUMN]:
            rejections.append(Rejection(_ONE_TRUE, TOO_MANY_PODS))
        for resource, amount in checked.items:
            column = table.resources.column(resource)
            free = 0 if column is None else allocatable[column] - requested[column]
            if amount > free:
                beyond = amount > (0 if column is None else allocatable[column])
                rejections.append(Rejection(_ONE_TRUE, f"Insufficient {resource}", beyond))
        return rejections

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        state.write(_PRE_SCORE_KEY, _ScoredRequests(container_level_request_list(pod, self.resources)))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        scored = state.read(_PRE_SCORE_KEY, _ScoredRequests)
        amounts = scored.amounts if scored else container_level_request_list(pod, self.resources)
        requested, allocatable = requested_and_allocatable(
            table, nodes, self.resources, amounts, non_zero=True
        )
        return self._scorer(requested, allocatable, self._weights)
