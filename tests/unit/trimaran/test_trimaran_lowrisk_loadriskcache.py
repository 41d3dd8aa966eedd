"""LowRiskOverCommitment's kept load risks are bit for bit the ones computed afresh, and only the
nodes whose inputs changed are computed again."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from secondary_scheduler.framework import NodeTable
from secondary_scheduler.plugins.trimaran.lowriskovercommitment import loadriskcache, scoring
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.scoring import (
    LoadRisks,
    NodeArrays,
    ResourceArrays,
    load_risks,
)
from secondary_scheduler.plugins.trimaran.resourcestats import Resources
from secondary_scheduler.plugins.trimaran.watchermetrics import ResourceDataArrays

NODES = 40


def _resource(rng: np.random.Generator, capacity: int) -> ResourceArrays:
    requests = rng.integers(0, capacity, NODES)
    return ResourceArrays(
        capacity=np.full(NODES, capacity, dtype=np.int64),
        requests=requests,
        limits=requests + rng.integers(0, capacity, NODES),
        usage=ResourceDataArrays(
            avg=rng.uniform(0, 90, NODES), stdev=rng.uniform(0, 5, NODES), valid=rng.random(NODES) < 0.9
        ),
    )


def _arrays(seed: int) -> NodeArrays:
    rng = np.random.default_rng(seed)
    return NodeArrays(
        has_metrics=np.ones(NODES, dtype=np.bool_),
        cpu=_resource(rng, 32_000),
        memory=_resource(rng, 128 * 2**30),
    )


def _same(kept: LoadRisks, fresh: LoadRisks) -> bool:
    return kept.cpu.tobytes() == fresh.cpu.tobytes() and kept.memory.tobytes() == fresh.memory.tobytes()


def test_kept_risks_equal_fresh_ones_and_only_changed_nodes_are_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = LowRiskOverCommitmentArgs()
    computed: list[int] = []

    def counting(arrays: NodeArrays, args: LowRiskOverCommitmentArgs) -> LoadRisks:
        computed.append(len(arrays.has_metrics))
        return load_risks(arrays, args)

    monkeypatch.setattr(loadriskcache, "load_risks", counting)
    cache, table = loadriskcache.LoadRiskCache(args), NodeTable()
    slots = np.arange(NODES, dtype=np.intp)
    arrays = _arrays(0)
    assert _same(cache.risks(table, slots, arrays), scoring.load_risks(arrays, args))
    assert _same(cache.risks(table, slots, arrays), scoring.load_risks(arrays, args))
    assert computed == [NODES]

    # A pod bound to node 3, node 7's metrics moved: those two only.
    cpu = replace(arrays.cpu, requests=arrays.cpu.requests.copy())
    cpu.requests[3] += 500
    memory_usage = replace(arrays.memory.usage, avg=arrays.memory.usage.avg.copy())
    memory_usage.avg[7] += 1.0
    changed = replace(arrays, cpu=cpu, memory=replace(arrays.memory, usage=memory_usage))
    assert _same(cache.risks(table, slots, changed), scoring.load_risks(changed, args))
    assert computed == [NODES, 2]

    # A subset of the nodes, in another order: the rows follow the slots.
    subset = np.array([9, 2, 30], dtype=np.intp)
    rows = loadriskcache._rows(changed, subset)
    assert _same(cache.risks(table, subset, rows), scoring.load_risks(rows, args))
    assert computed == [NODES, 2]

    # Every node's metrics refreshed: all again.
    refreshed = _arrays(1)
    assert _same(cache.risks(table, slots, refreshed), scoring.load_risks(refreshed, args))
    assert computed == [NODES, 2, NODES]


def test_scores_with_kept_risks_are_the_scores_without() -> None:
    args = LowRiskOverCommitmentArgs()
    arrays = _arrays(3)
    pod = scoring.PodResources(
        requests=Resources(milli_cpu=1000, memory=2**30),
        limits=Resources(milli_cpu=4000, memory=2**31),
    )
    risks = loadriskcache.LoadRiskCache(args).risks(NodeTable(), np.arange(NODES, dtype=np.intp), arrays)
    kept = scoring.score_nodes(arrays, pod, args, risks)
    assert kept.tolist() == scoring.score_nodes(arrays, pod, args).tolist()
