"""NodeResourcesBalancedAllocation: prefer nodes whose resources fill up evenly with the pod.

Per node, each scored resource's fraction requested/allocatable (at most 1, real requests,
pod included) is computed and the score is ``(1 - standard deviation of the fractions) *
100``, truncated. With exactly two resources the deviation is ``|f1 - f2| / 2``. Pods that
request none of the resources are best-effort: spreading them by balance would stack them,
so scoring is skipped for them, as kube-scheduler has done since 1.32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.args import args_mapping
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, PreScorePlugin, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import MAX_NODE_SCORE
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs
from secondary_scheduler.plugins.noderesources.resource_allocation import (
    parse_resources,
    pod_request_list,
    requested_and_allocatable,
)

_PRE_SCORE_KEY = "PreScoreNodeResourcesBalancedAllocation"


class _Requests(tuple[int, ...]):
    """The pod's request of each scored resource (state for Score)."""


def _standard_deviation(fractions: FloatArray, counted: BoolArray) -> FloatArray:
    """Population standard deviation of each row's counted fractions, summed in resource order like Go."""
    if fractions.shape[1] == 2 and counted.all():
        # Every node has both resources (the usual cpu and memory): the two-value case alone.
        return np.abs((fractions[:, 0] - fractions[:, 1]) / 2)
    count = counted.sum(axis=1)
    if fractions.shape[1] >= 2:
        first_counted = np.argsort(~counted, axis=1, kind="stable")
        ordered = np.take_along_axis(fractions, first_counted, axis=1)
        two = np.abs((ordered[:, 0] - ordered[:, 1]) / 2)
    else:
        two = np.zeros(len(fractions))
    total = np.zeros(len(fractions))
    for column in range(fractions.shape[1]):
        total += fractions[:, column]
    mean = total / np.maximum(count, 1)
    squares = np.zeros(len(fractions))
    for column in range(fractions.shape[1]):
        deviation = fractions[:, column] - mean
        squares += np.where(counted[:, column], deviation * deviation, 0.0)
    many = np.sqrt(squares / np.maximum(count, 1))
    return np.where(count == 2, two, np.where(count > 2, many, 0.0))


class BalancedAllocation(PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "NodeResourcesBalancedAllocation"
    args_model = NodeResourcesBalancedAllocationArgs

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        self.resources = parse_resources(args_mapping(args).get("resources"))

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        requests = _Requests(pod_request_list(pod, self.resources, non_zero=False))
        if not any(requests):
            return SKIP
        state.write(_PRE_SCORE_KEY, requests)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        requests = state.read(_PRE_SCORE_KEY, _Requests)
        if requests is None:
            requests = _Requests(pod_request_list(pod, self.resources, non_zero=False))
            if not any(requests):
                return np.zeros(len(nodes), dtype=np.int64)
        requested, allocatable = requested_and_allocatable(
            table, nodes, self.resources, requests, non_zero=False
        )
        counted = allocatable != 0
        fractions = np.zeros(requested.shape)
        np.divide(requested, allocatable, out=fractions, where=counted)
        fractions = np.minimum(fractions, 1.0)
        deviation = _standard_deviation(fractions, counted)
        return np.trunc((1 - deviation) * MAX_NODE_SCORE).astype(np.int64)
