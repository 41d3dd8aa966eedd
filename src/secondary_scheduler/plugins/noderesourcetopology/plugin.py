"""NodeResourceTopologyMatch: place pods where the kubelet's Topology Manager will admit them.

A node can have room for a Guaranteed pod in total but not in any one NUMA zone; under the
kubelet's single-numa-node policy it then rejects the pod after the scheduler bound it.
This plugin reads each node's NodeResourceTopology (topology.node.k8s.io/v1alpha2, named
after the node, published by an exporter on the node) and, as scheduler-plugins v0.34.7:

- Filter: runs the single-numa-node admission in memory (alignment.py);
- Score: scores the zones with the configured strategy (scoring.py);
- Reserve/Unreserve/PostBind: keep the cache's accounting (cache.py) right until the
  exporter reports the pod.

Nodes without an object pass the Filter and score 0, as upstream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, KubeObject, Slots
from secondary_scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import (
    CycleState,
    FilterError,
    FilterPlugin,
    PostBindPlugin,
    Rejection,
    ReservePlugin,
    ScorePlugin,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SUCCESS, Status
from secondary_scheduler.plugins.noderesourcetopology.alignment import single_numa_node
from secondary_scheduler.plugins.noderesourcetopology.args import (
    LEAST_NUMA_NODES,
    NodeResourceTopologyMatchArgs,
)
from secondary_scheduler.plugins.noderesourcetopology.cache import (
    CacheSettings,
    DiscardReserved,
    NRTCache,
    OverReserve,
    Passthrough,
    PodLister,
    Resyncer,
)
from secondary_scheduler.plugins.noderesourcetopology.notes import NUMANote, note_of
from secondary_scheduler.plugins.noderesourcetopology.podresources import (
    BEST_EFFORT,
    GUARANTEED,
    PodResources,
    pod_resources,
)
from secondary_scheduler.plugins.noderesourcetopology.scoring import (
    MAX_NODE_SCORE,
    STRATEGIES,
    least_numa_score,
    strategy_score,
)
from secondary_scheduler.plugins.noderesourcetopology.topology import (
    NODE_RESOURCE_TOPOLOGIES,
    numa_nodes,
    topology_manager,
)

_ALWAYS_ON_NODE = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})
_PODS_SERVICE = "noderesourcetopology/pods"
_PROFILES_SERVICE = "noderesourcetopology/profiles"


class _Profiles(set[str]):
    """The scheduler names of every profile running an overreserve cache: their pods are not foreign."""


class NodeResourceTopologyMatch(FilterPlugin, ScorePlugin, ReservePlugin, PostBindPlugin):
    name: ClassVar[str] = "NodeResourceTopologyMatch"
    args_model = NodeResourceTopologyMatchArgs

    def __init__(self, args: NodeResourceTopologyMatchArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        self.informer = handle.informer(NODE_RESOURCE_TOPOLOGIES)
        self.weights = args.weights
        self.strategy_type = args.scoring_strategy.type
        self.cache = self._build_cache(args, handle)

    def _build_cache(self, args: NodeResourceTopologyMatchArgs, handle: Handle) -> NRTCache:
        if args.discard_reserved_nodes:
            return DiscardReserved(self.informer)
        if args.cache_resync_period_seconds <= 0:
            return Passthrough(self.informer)
        pods = handle.services.get(_PODS_SERVICE)
        if not isinstance(pods, PodLister):
            pods = PodLister()
            handle.register_service(_PODS_SERVICE, pods)
            handle.watch_pods(pods)
        profiles = handle.services.get(_PROFILES_SERVICE)
        if not isinstance(profiles, _Profiles):
            profiles = _Profiles()
            handle.register_service(_PROFILES_SERVICE, profiles)
        if handle.framework is not None and args.cache.foreign_pods_detect != "None":
            profiles.add(handle.framework.scheduler_name)
        settings = CacheSettings(
            foreign_pods_detect=args.cache.foreign_pods_detect,
            resync_method=args.cache.resync_method,
            informer_mode=args.cache.informer_mode,
            resync_scope=args.cache.resync_scope,
        )
        cache = OverReserve(self.informer, pods, settings, profiles)
        owner = handle.framework.scheduler_name if handle.framework is not None else "default"
        handle.register_service(
            f"noderesourcetopology/resync/{owner}", Resyncer(cache, float(args.cache_resync_period_seconds))
        )
        return cache

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)),
            ClusterEventWithHint(
                ClusterEvent(NODE_RESOURCE_TOPOLOGIES.kind, ActionType.ADD | ActionType.UPDATE)
            ),
        )

    # -- Filter -------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        resources = pod_resources(pod.obj)
        if resources.qos == BEST_EFFORT and not resources.include_non_native():
            return []
        note = note_of(state, self.name)
        rejected: dict[str, list[int]] = {}
        for index, slot in enumerate(candidates.tolist()):
            node = table.names[slot]
            message = self._filter_node(pod, resources, node, table.objects[slot], note)
            if message:
                rejected.setdefault(message, []).append(index)
        rejections = []
        for message, indexes in rejected.items():
            mask = np.zeros(len(candidates), dtype=np.bool_)
            mask[indexes] = True
            rejections.append(Rejection(mask, message))
        return rejections

    def _filter_node(
        self, pod: PodInfo, resources: PodResources, node: str, node_obj: KubeObject | None, note: NUMANote
    ) -> str:
        """The rejection message for this node ('' when it passes)."""
        nrt, info = self.cache.get(node, pod.obj)
        if not info.fresh:
            note.filtered[node] = "topology data not trusted now (cache: reserved or foreign pods)"
            return "invalid node topology data"
        if nrt is None:
            note.filtered[node] = "no NodeResourceTopology: passes"
            return ""
        tm = topology_manager(nrt)
        zones = numa_nodes(nrt)
        allocatable = set(((node_obj or {}).get("status") or {}).get("allocatable") or ())

        def node_has(resource: str) -> bool:
            return resource in _ALWAYS_ON_NODE or resource in allocatable

        verdict = single_numa_node(tm, zones, resources, node_has)
        if verdict is None:
            note.filtered[node] = f"{tm}: nothing to align, passes"
            return ""
        if verdict.error:
            raise FilterError(f"node {node}: {verdict.message}")
        if verdict.fits:
            where = ", ".join(f"{name} -> NUMA {zone}" for name, zone in verdict.placements)
            note.filtered[node] = f"fits ({tm.scope} scope): {where}"
            return ""
        self.cache.node_maybe_over_reserved(node, pod.obj)
        note.filtered[node] = f"no NUMA zone fits ({tm.scope} scope): {verdict.blocked}"
        return verdict.message

    # -- Score --------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        resources = pod_resources(pod.obj)
        scores = np.zeros(len(nodes), dtype=np.int64)
        if resources.qos != GUARANTEED:
            scores[:] = MAX_NODE_SCORE
            return scores
        note = note_of(state, self.name)
        note.strategy = self.strategy_type
        for index, slot in enumerate(nodes.tolist()):
            node = table.names[slot]
            score, lines = self._score_node(pod, resources, node)
            scores[index] = score
            note.scored[node] = lines
        return scores

    def _score_node(self, pod: PodInfo, resources: PodResources, node: str) -> tuple[int, list[str]]:
        nrt, info = self.cache.get(node, pod.obj)
        if not info.fresh:
            return 0, ["topology data not trusted now: 0"]
        if nrt is None:
            return 0, ["no NodeResourceTopology: 0"]
        tm = topology_manager(nrt)
        zones = numa_nodes(nrt)
        if self.strategy_type == LEAST_NUMA_NODES:
            result = least_numa_score(tm, zones, resources)
        else:
            result = strategy_score(tm, zones, resources, STRATEGIES[self.strategy_type], self.weights)
        if result is None:
            return 0, [f"{tm}: not scored, 0"]
        return result

    # -- Reserve, Unreserve, PostBind -----------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.cache.reserve(node_name, pod.obj)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.cache.unreserve(node_name, pod.obj)

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.cache.post_bind(node_name, pod.obj)
