"""The PodTopologySpread plugin: DoNotSchedule constraints filter, ScheduleAnyway ones score.

A pod's own ``topologySpreadConstraints`` apply; a pod without any gets the default ones
(``defaults.py``: the system defaults, or the args' ``defaultConstraints`` with
``defaultingType: List``) over the pods its Services and controller select.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.hints import spread_change_may_help
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
from secondary_scheduler.framework.podinfo import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, PodInfo, SpreadConstraint
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.plugins.podtopologyspread import filtering, scoring
from secondary_scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs
from secondary_scheduler.plugins.podtopologyspread.common import MatchingPods
from secondary_scheduler.plugins.podtopologyspread.defaults import DefaultConstraints

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
    reads_node_pods: ClassVar[bool] = False
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

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.defaults = DefaultConstraints(args, handle)

    def constraints(self, pod: PodInfo, action: str) -> list[SpreadConstraint]:
        """The pod's own constraints with ``whenUnsatisfiable == action``, or else the defaults."""
        if pod.spread_constraints:
            return [item for item in pod.spread_constraints if item.when_unsatisfiable == action]
        return self.defaults.for_pod(pod, action)

    def _filter_state(self, state: CycleState, pod: PodInfo, table: NodeTable) -> filtering.FilterState:
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        return filtering.filter_state(table, pod, constraints, _matching(state, pod, table))

    def _score_state(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots
    ) -> scoring.ScoreState | None:
        # Only the system defaults score nodes that lack a topology label (upstream's requireAllTopologies).
        require_all = bool(pod.spread_constraints) or not self.defaults.system_defaulted
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        return scoring.score_state(table, pod, nodes, constraints, _matching(state, pod, table), require_all)

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        """The pods of the pod's namespace that one of its DoNotSchedule constraints selects."""
        selectors = [constraint.selector for constraint in self.constraints(pod, DO_NOT_SCHEDULE)]
        if not selectors:
            return reads_no_pod
        return lambda other: (
            other.namespace == pod.namespace and any(selector.matches(other.labels) for selector in selectors)
        )

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        prepared = self._filter_state(state, pod, table)
        if not prepared.domains:
            return SKIP
        state.write(_PRE_FILTER_KEY, prepared)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        prepared = state.read(_PRE_FILTER_KEY, filtering.FilterState)
        if prepared is None:  # PreFilter is not enabled
            prepared = self._filter_state(state, pod, table)
            state.write(_PRE_FILTER_KEY, prepared)
        return filtering.rejections(prepared, candidates)

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        prepared = self._score_state(state, pod, table, nodes)
        if prepared is None:
            return SKIP
        state.write(_PRE_SCORE_KEY, prepared)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        prepared = state.read(_PRE_SCORE_KEY, scoring.ScoreState)
        if prepared is None:  # PreScore is not enabled: prepare here, and keep it for normalize
            prepared = self._score_state(state, pod, table, nodes)
            if prepared is None:
                return np.zeros(len(nodes), dtype=np.int64)
            state.write(_PRE_SCORE_KEY, prepared)
        return scoring.scores(prepared, nodes)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        prepared = state.read(_PRE_SCORE_KEY, scoring.ScoreState)
        return scores if prepared is None else scoring.normalize(prepared, scores)
