"""Run NodeResourceTopologyMatch in memory over nodes, their NodeResourceTopologies and a pod."""

from __future__ import annotations

from typing import Any

from secondary_scheduler.pluginapi import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch

JSON = dict[str, Any]


class Run:
    def __init__(self, nodes: list[JSON], nrts: list[JSON], args: JSON | None = None) -> None:
        self.handle = Handle()
        self.plugin = NodeResourceTopologyMatch.build(args or {}, self.handle)
        self.handle.informers.fill(nrts)
        self.table = NodeTable.from_objects(nodes, [])
        self.state = CycleState()

    def filter(self, pod: JSON) -> dict[str, str]:
        """Node -> rejection message ('' when it passes)."""
        slots = self.table.active_slots()
        verdict = {self.table.names[slot]: "" for slot in slots.tolist()}
        for rejection in self.plugin.filter(self.state, PodInfo.from_pod(pod), self.table, slots):
            for slot, rejected in zip(slots.tolist(), rejection.mask.tolist(), strict=True):
                if rejected:
                    verdict[self.table.names[slot]] = rejection.reason
        return verdict

    def score(self, pod: JSON) -> dict[str, int]:
        slots = self.table.active_slots()
        scores = self.plugin.score(self.state, PodInfo.from_pod(pod), self.table, slots)
        return {
            self.table.names[slot]: int(score)
            for slot, score in zip(slots.tolist(), scores.tolist(), strict=True)
        }

    def note(self) -> list[str]:
        return self.state.notes[NodeResourceTopologyMatch.name].lines()
