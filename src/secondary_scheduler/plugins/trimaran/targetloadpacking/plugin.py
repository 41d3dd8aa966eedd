"""TargetLoadPacking as a framework Score plugin over the NodeTable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.trimaran.pluginbase import TrimaranPlugin
from secondary_scheduler.plugins.trimaran.recentlyscheduled import Entry
from secondary_scheduler.plugins.trimaran.resourcestats import KubeObject, resources_of
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs
from secondary_scheduler.plugins.trimaran.targetloadpacking.scoring import (
    NodeArrays,
    missing_utilisation,
    predict_pod_cpu,
    score_nodes,
)


class TargetLoadPacking(TrimaranPlugin, ScorePlugin):
    name: ClassVar[str] = "TargetLoadPacking"
    args_model = TargetLoadPackingArgs

    def __init__(self, args: TargetLoadPackingArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        self._capacity = CapacityColumn()
        self._column = MissingColumn()
        self._missing_by_node: dict[str, int] = {}
        """Node -> its recently placed pods' missing CPU, for ``_missing_key``'s metrics window."""
        self._missing_key: tuple[int, bool] | None = None
        self._missing_version = 0
        """The recently-scheduled cache's version the sums follow."""
        self._predicted: dict[int, tuple[KubeObject, int]] = {}
        """id(Pod) -> (the Pod, its predicted CPU): kept while the Pod is (the object is held)."""

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        usage = self.usage(table, nodes)
        percent = usage.cpu_percent
        missing = self._missing(table, usage.window_end, nodes)
        estimated = np.isnan(percent)
        if estimated.any() and usage.estimate is not None:
            percent = np.where(estimated, usage.estimate.cpu, percent)
            # An estimate from requests already includes recently placed pods.
            missing = np.where(estimated, 0, missing)
        else:
            # Nothing to estimate (the usual case): the requests-based estimate is never computed.
            estimated = np.zeros(len(nodes), dtype=np.bool_)
        arrays = NodeArrays(
            capacity_millis=self._capacity.of(table)[nodes], cpu_percent=percent, missing_millis=missing
        )
        scores = score_nodes(arrays, predict_pod_cpu(pod.obj, self.args), self.args)
        counted = np.flatnonzero(missing)
        names = map(table.names.__getitem__, nodes[counted].tolist())
        recent = dict(zip(names, missing[counted].tolist(), strict=True))
        note = usage.note(self.name, table, nodes, {"cpu": estimated}, np.isnan(percent), recent)
        self.remember(state, note)
        return scores

    def _missing(self, table: NodeTable, window_end: int, nodes: Slots) -> IntArray:
        """Per node of ``nodes``, predicted CPU of recently placed pods the metrics do not show yet.

        Each node's sum is kept between cycles and recomputed only for nodes whose recently placed
        pods changed, or for all when the metrics window moves (every pod's verdict may change).
        The sums are also kept as a column over the table's slots, so a cycle only gathers its nodes.
        """
        recent = self.services.recently_scheduled
        recent.tidy()
        key = (window_end, self.args.parity_mode)
        changed = recent.changed_since(self._missing_version) if key == self._missing_key else None
        restarted = changed is None
        if changed is None:
            self._missing_by_node = {}
            self._predicted = {}
            changed = {node for node, _entries in recent.on_nodes()}
        for node in changed:
            value = self._node_missing(recent.on_node(node), window_end)
            if value:
                self._missing_by_node[node] = value
            else:
                self._missing_by_node.pop(node, None)
        self._missing_key, self._missing_version = key, recent.version
        return self._column.of(table, self._missing_by_node, None if restarted else changed)[nodes]

    def _node_missing(self, entries: Iterable[Entry], window_end: int) -> int:
        """One node's missing CPU (``missing_utilisation``), each pod's prediction computed once."""
        parity = self.args.parity_mode
        stamped = [(stamp, entry.pod) for entry in entries if (stamp := entry.stamp(parity)) is not None]
        return missing_utilisation(stamped, window_end, self.args, self._prediction)

    def _prediction(self, pod: KubeObject) -> int:
        uid = id(pod)
        cached = self._predicted.get(uid)
        if cached is None or cached[0] is not pod:
            cached = self._predicted[uid] = (pod, predict_pod_cpu(pod, self.args))
        return cached[1]


class MissingColumn:
    """The per-node missing CPU sums laid out over a NodeTable's slots (0 for nodes without any).

    Rebuilt from the sums when the table (or its set of nodes) changes or every sum was recomputed;
    otherwise only the slots of the nodes whose sums changed are written.
    """

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._slots_version = -1
        self._values: IntArray = np.zeros(0, dtype=np.int64)

    def of(self, table: NodeTable, sums: Mapping[str, int], changed: Iterable[str] | None) -> IntArray:
        """The column for ``table``; ``changed``: the nodes whose sums changed, None for all."""
        if changed is None or table is not self._table or table.slots_version != self._slots_version:
            self._table = table
            self._slots_version = table.slots_version
            self._values = np.zeros(len(table.names), dtype=np.int64)
            changed = sums
        slot_of = table.slot_of
        for node in changed:
            slot = slot_of(node)
            if slot is not None:
                self._values[slot] = sums.get(node, 0)
        return self._values


class CapacityColumn:
    """Each slot's ``status.capacity.cpu`` in millicores, re-read only for nodes whose object changed.

    TargetLoadPacking divides by capacity (not allocatable, which is all the NodeTable keeps).
    """

    def __init__(self) -> None:
        self._objects: list[KubeObject | None] = []
        self._millis: IntArray = np.zeros(0, dtype=np.int64)

    def of(self, table: NodeTable) -> IntArray:
        objects = table.objects
        if objects == self._objects:
            return self._millis
        millis = np.zeros(len(objects), dtype=np.int64)
        kept = min(len(objects), len(self._objects))
        millis[:kept] = self._millis[:kept]
        for slot, node in enumerate(objects):
            if slot >= kept or node is not self._objects[slot]:
                millis[slot] = _capacity_millis(node)
        self._objects = list(objects)
        self._millis = millis
        return millis


def _capacity_millis(node: KubeObject | None) -> int:
    if node is None:
        return 0
    return resources_of((node.get("status") or {}).get("capacity")).milli_cpu
