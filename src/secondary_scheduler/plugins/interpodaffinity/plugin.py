"""The InterPodAffinity plugin: required terms filter, preferred terms score.

Namespaces of a term come from ``namespaces`` or from ``namespaceSelector`` matched against
the namespaces' labels, read from the Namespaces informer (in a ``score`` snapshot without
Namespace objects a namespace is known by its ``kubernetes.io/metadata.name`` label only).
Args: ``hardPodAffinityWeight`` (default 1) and ``ignorePreferredTermsOfExistingPods``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from secondary_scheduler.framework.affinityterms import namespace_name_only
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.args import args_mapping
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.hints import affinity_change_may_help
from secondary_scheduler.framework.informers import NAMESPACES
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PodPredicate,
    PreFilterPlugin,
    PreScorePlugin,
    Rejection,
    ScorePlugin,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SKIP, SUCCESS, Status
from secondary_scheduler.plugins.interpodaffinity import filtering, scoring
from secondary_scheduler.plugins.interpodaffinity.args import InterPodAffinityArgs

_PRE_FILTER_KEY = "PreFilterInterPodAffinity"
_PRE_SCORE_KEY = "PreScoreInterPodAffinity"


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = "InterPodAffinity"
    reads_node_pods: ClassVar[bool] = False
    args_model = InterPodAffinityArgs

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        labels = self.namespace_labels
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, pod_actions),
                lambda pod, old, new: affinity_change_may_help(pod, old, new, labels),
            ),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        )

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        self._namespaces = handle.informer(NAMESPACES)
        raw = args_mapping(args)
        self.hard_pod_affinity_weight = int(raw.get("hardPodAffinityWeight", 1))
        self.ignore_preferred_terms_of_existing_pods = bool(
            raw.get("ignorePreferredTermsOfExistingPods", False)
        )

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """A namespace's labels, for terms with a namespaceSelector."""
        known = self._namespaces.get(namespace)
        if known is None:
            return namespace_name_only(namespace)
        return (known.get("metadata") or {}).get("labels") or {}

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        """The pods the pod's required terms select, and the pods whose required anti-affinity selects it."""
        labels = self.namespace_labels
        terms = (*pod.required_affinity_terms, *pod.required_anti_affinity_terms)

        def reads(other: PodInfo) -> bool:
            if other.required_anti_affinity_terms and any(
                term.matches(pod.namespace, pod.labels, labels) for term in other.required_anti_affinity_terms
            ):
                return True
            return bool(terms) and any(term.matches(other.namespace, other.labels, labels) for term in terms)

        return reads

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        prepared = filtering.filter_state(table, pod, self.namespace_labels)
        if not (
            prepared.existing_anti_affinity or pod.required_affinity_terms or pod.required_anti_affinity_terms
        ):
            return SKIP
        state.write(_PRE_FILTER_KEY, prepared)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        labels = self.namespace_labels
        prepared = state.read(_PRE_FILTER_KEY, filtering.FilterState) or filtering.filter_state(
            table, pod, labels
        )
        return filtering.rejections(prepared, table, pod, candidates, labels)

    def _score_state(self, table: NodeTable, pod: PodInfo) -> scoring.ScoreState | None:
        return scoring.score_state(
            table,
            pod,
            self.namespace_labels,
            self.hard_pod_affinity_weight,
            self.ignore_preferred_terms_of_existing_pods,
        )

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        prepared = self._score_state(table, pod)
        if prepared is None:
            return SKIP
        state.write(_PRE_SCORE_KEY, prepared)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        prepared = state.read(_PRE_SCORE_KEY, scoring.ScoreState)
        if prepared is None:  # PreScore is not enabled: prepare here, and keep it for normalize
            prepared = self._score_state(table, pod) or scoring.ScoreState({})
            state.write(_PRE_SCORE_KEY, prepared)
        return scoring.scores(prepared, table, nodes)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        prepared = state.read(_PRE_SCORE_KEY, scoring.ScoreState)
        if prepared is None or not prepared.topology_scores:
            return scores
        return scoring.normalize(scores)
