"""Filter on NoSchedule/NoExecute taints; score by untolerated PreferNoSchedule taints.

The filter reason names no taint: kube-scheduler's 1.34 patch releases since late 2025 no
longer reveal taint keys and values in pod statuses ("node(s) had untolerated taint(s)"). Scoring counts, per
node, the PreferNoSchedule taints the pod does not tolerate (only tolerations with effect
PreferNoSchedule or no effect count), then reverses: the fewest such taints scores 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PreScorePlugin,
    Rejection,
    ScorePlugin,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import default_normalize_score
from secondary_scheduler.framework.status import SUCCESS, Status
from secondary_scheduler.framework.taints import (
    DO_NOT_SCHEDULE_EFFECTS,
    PREFER_NO_SCHEDULE,
    Taint,
    Toleration,
    tolerated,
)

REASON = "node(s) had untolerated taint(s)"
_PRE_SCORE_KEY = "PreScoreTaintToleration"


class _PreferNoScheduleTolerations(tuple[Toleration, ...]):
    """The pod's tolerations that can tolerate a PreferNoSchedule taint (state for Score)."""

    @classmethod
    def of(cls, pod: PodInfo) -> _PreferNoScheduleTolerations:
        return cls(item for item in pod.tolerations if item.effect in ("", PREFER_NO_SCHEDULE))


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "TaintToleration"
    reads_node_pods: ClassVar[bool] = False

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)),)

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        verdicts: dict[Taint, bool] = {}

        def repels(taints: Sequence[Taint]) -> bool:
            for taint in taints:
                if taint.effect in DO_NOT_SCHEDULE_EFFECTS:
                    if taint not in verdicts:
                        verdicts[taint] = tolerated(taint, pod.tolerations)
                    if not verdicts[taint]:
                        return True
            return False

        taints = table.taints
        mask = np.zeros(len(candidates), dtype=np.bool_)
        for position in np.flatnonzero(table.tainted[candidates]).tolist():
            mask[position] = repels(taints[candidates[position]])
        return [Rejection(mask, REASON, unresolvable=True)]

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        state.write(_PRE_SCORE_KEY, _PreferNoScheduleTolerations.of(pod))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        tolerations = state.read(
            _PRE_SCORE_KEY, _PreferNoScheduleTolerations
        ) or _PreferNoScheduleTolerations.of(pod)
        taints = table.taints
        counts = np.zeros(len(nodes), dtype=np.int64)
        for position in np.flatnonzero(table.tainted[nodes]).tolist():
            counts[position] = sum(
                taint.effect == PREFER_NO_SCHEDULE and not tolerated(taint, tolerations)
                for taint in taints[nodes[position]]
            )
        return counts

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return default_normalize_score(scores, reverse=True)
