"""The PodTopologySpread plugin: DoNotSchedule constraints filter, ScheduleAnyway ones score.

Only the pod's own ``topologySpreadConstraints`` are used. kube-scheduler also applies
cluster-level default constraints (``defaultConstraints``, or the system defaults: zone and
hostname spreading with a selector derived from the pod's Services and ReplicaSets or
StatefulSets); finding those owners needs Service and workload listers this scheduler does
not keep, so the args are accepted and pods without constraints are not spread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from secondary_scheduler.config.plugin_args import PodTopologySpreadArgs
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.hints import spread_change_may_help
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    Rejection,
    ScorePlugin,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import DO_NOT_SCHEDULE, PodInfo
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.plugins.podtopologyspread import filtering, scoring
from secondary_scheduler.plugins.podtopologyspread.common import MatchingPods

_MATCHING_KEY = "MatchingPodsPodTopologySpread"
_PRE_FILTER_KEY = "PreFilterPodTopologySpread"
_PRE_SCORE_KEY = "PreScorePodTopologySpread"


def _matching(state: CycleState, pod: PodInfo, table: NodeTable) -> MatchingPods:
    matching = state.read(_MATCHING_KEY, MatchingPods)
    if matching is None:
        matching = MatchingPods(table, pod.namespace)
        state.write(_MATCHING_KEY, matching)
    return matching


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "PodTopologySpread"
    args_model = PodTopologySpreadArgs

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        node_actions = (
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        )
        return (
            ClusterEventWithHint(ClusterEvent(POD, pod_actions), spread_change_may_help),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
        )

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        if not any(item.when_unsatisfiable == DO_NOT_SCHEDULE for item in pod.spread_constraints):
            return SKIP
        state.write(_PRE_FILTER_KEY, filtering.filter_state(table, pod, _matching(state, pod, table)))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        prepared = state.read(_PRE_FILTER_KEY, filtering.FilterState)
        if prepared is None:  # PreFilter is not enabled
            prepared = filtering.filter_state(table, pod, _matching(state, pod, table))
            state.write(_PRE_FILTER_KEY, prepared)
        return filtering.rejections(prepared, candidates)

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        prepared = scoring.score_state(table, pod, nodes, _matching(state, pod, table))
        if prepared is None:
            return SKIP
        state.write(_PRE_SCORE_KEY, prepared)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        prepared = state.read(_PRE_SCORE_KEY, scoring.ScoreState)
        if prepared is None:  # PreScore is not enabled: prepare here, and keep it for normalize
            prepared = scoring.score_state(table, pod, nodes, _matching(state, pod, table))
            if prepared is None:
                return np.zeros(len(nodes), dtype=np.int64)
            state.write(_PRE_SCORE_KEY, prepared)
        return scoring.scores(prepared, nodes)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        prepared = state.read(_PRE_SCORE_KEY, scoring.ScoreState)
        return scores if prepared is None else scoring.normalize(prepared, scores)
