"""Per node, the load risks last computed, and what they were computed from.

A node's load risk (``scoring.load_risk``: a Beta CDF, a continued fraction of up to 300 steps
per node) depends on its capacity, its pods' totals and its metrics, not on the pod being
scheduled. Metrics change once per collector refresh and a node's pods when one binds there, so
between two refreshes most cycles would compute every node's risk again to the same floats:
this keeps them, and recomputes only the nodes whose inputs differ (compared exactly, so a
kept risk is bit for bit the one a fresh computation would give).
"""

from __future__ import annotations

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.scoring import (
    LoadRisks,
    NodeArrays,
    ResourceArrays,
    load_risks,
)
from secondary_scheduler.plugins.trimaran.watchermetrics import ResourceDataArrays


class LoadRiskCache:
    """Load risks by node slot, for one NodeTable and its slot layout (``slots_version``)."""

    def __init__(self, args: LowRiskOverCommitmentArgs) -> None:
        self.args = args
        self._table: NodeTable | None = None
        self._version = -1
        self._empty(0)

    def _empty(self, size: int) -> None:
        """Room for ``size`` slots, none known (the other rows are never read before written)."""
        self._known: BoolArray = np.zeros(size, dtype=np.bool_)
        self._amounts: IntArray = np.zeros((size, 6), dtype=np.int64)
        """Per slot: cpu capacity, requests, limits, then memory's."""
        self._usage: FloatArray = np.zeros((size, 4), dtype=np.float64)
        """Per slot: cpu avg, stdev, then memory's."""
        self._valid: BoolArray = np.zeros((size, 2), dtype=np.bool_)
        self._risks: FloatArray = np.zeros((size, 2), dtype=np.float64)
        """Per slot: the cpu and memory load risks computed from the row's inputs."""

    def risks(self, table: NodeTable, nodes: Slots, arrays: NodeArrays) -> LoadRisks:
        """``scoring.load_risks(arrays, args)`` for ``arrays`` (one entry per slot of ``nodes``)."""
        if table is not self._table or table.slots_version != self._version:
            # Another table or slot layout (a node came or went, the table grew): start over.
            self._table, self._version = table, table.slots_version
            self._empty(table.capacity)
        amounts = np.column_stack(
            [
                arrays.cpu.capacity,
                arrays.cpu.requests,
                arrays.cpu.limits,
                arrays.memory.capacity,
                arrays.memory.requests,
                arrays.memory.limits,
            ]
        ).astype(np.int64)
        usage = np.column_stack(
            [arrays.cpu.usage.avg, arrays.cpu.usage.stdev, arrays.memory.usage.avg, arrays.memory.usage.stdev]
        ).astype(np.float64)
        valid = np.column_stack([arrays.cpu.usage.valid, arrays.memory.usage.valid])
        kept = self._usage[nodes]
        same = (
            self._known[nodes]
            & (self._amounts[nodes] == amounts).all(axis=1)
            & ((kept == usage) | (np.isnan(kept) & np.isnan(usage))).all(axis=1)
            & (self._valid[nodes] == valid).all(axis=1)
        )
        if not same.all():
            changed = np.flatnonzero(~same)
            fresh = load_risks(_rows(arrays, changed), self.args)
            slots = nodes[changed]
            self._risks[slots, 0] = fresh.cpu
            self._risks[slots, 1] = fresh.memory
            self._amounts[slots] = amounts[changed]
            self._usage[slots] = usage[changed]
            self._valid[slots] = valid[changed]
            self._known[slots] = True
        risks = self._risks[nodes]
        return LoadRisks(cpu=risks[:, 0], memory=risks[:, 1])


def _rows(arrays: NodeArrays, index: IntArray) -> NodeArrays:
    """The nodes at ``index`` of ``arrays``."""
    return NodeArrays(
        has_metrics=arrays.has_metrics[index],
        cpu=_resource_rows(arrays.cpu, index),
        memory=_resource_rows(arrays.memory, index),
    )


def _resource_rows(resource: ResourceArrays, index: IntArray) -> ResourceArrays:
    usage = resource.usage
    return ResourceArrays(
        capacity=resource.capacity[index],
        requests=resource.requests[index],
        limits=resource.limits[index],
        usage=ResourceDataArrays(avg=usage.avg[index], stdev=usage.stdev[index], valid=usage.valid[index]),
    )
