"""PodMoves: what-if moves of pods, on the whole table or in the node totals alone, undone exactly."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from tests.unit.framework.kubeobjects import container, default_framework, make_node, make_pod, table_of

from secondary_scheduler.framework import CycleState, NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.podmoves import Placement, PodMoves

TOTALS = ("requested", "non_zero_requested", "pod_count")


def _pod(
    rng: random.Random, name: str, node: str | None = None, extended: str = "example.com/gpu"
) -> PodInfo:
    ports = [{"containerPort": 80, "hostPort": rng.choice((8080, 8081))}] if rng.random() < 0.3 else []
    requests = {"cpu": f"{rng.randint(0, 4) * 250}m", "memory": f"{rng.randint(0, 3)}Gi"}
    if rng.random() < 0.1:
        requests[extended] = "1"  # a resource the table may not have a column for yet
    return PodInfo.from_pod(
        make_pod(name, node_name=node, containers=[container(requests=requests, ports=ports)])
    )


def _snapshot(table: NodeTable) -> tuple[object, ...]:
    return (
        *(getattr(table, name).copy() for name in TOTALS),
        [Counter(ports) for ports in table.used_ports],
        [list(pods.items()) for pods in table.pods],
    )


def _same_totals(a: NodeTable, b: NodeTable) -> None:
    for name in TOTALS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert [+ports for ports in a.used_ports] == [+ports for ports in b.used_ports]


def test_a_nodes_pod_order_comes_back_after_whole_table_moves() -> None:
    table = NodeTable.from_objects(
        [make_node("a")], [make_pod(f"p{index}", node_name="a") for index in range(4)]
    )
    pods = list(table.pods[0].values())
    with PodMoves(table, totals_only=False) as moves:
        moves.remove([(0, pods[0]), (0, pods[2])])
        assert list(table.pods[0]) == ["default/p1", "default/p3"]
        moves.add([(0, pods[2]), (0, pods[0])])
    assert list(table.pods[0]) == [f"default/p{index}" for index in range(4)]


def test_totals_only_moves_count_as_whole_table_moves_and_both_are_undone() -> None:
    """Random moves (victims off and back, extra pods on and off, every pod off a node, host
    ports, a new resource): during the moves both ways give the same totals; afterwards the
    table is as it was."""
    for seed in range(30):
        rng = random.Random(seed)
        nodes = [make_node(f"n{index}", cpu="16", memory="64Gi") for index in range(6)]
        placed = [_pod(rng, f"p{index}", f"n{rng.randrange(6)}") for index in range(25)]
        # Extra pods may bring a resource no placed pod has: the columns widen amid the moves.
        extra = [_pod(rng, f"x{index}", extended="example.com/fpga") for index in range(8)]
        tables = [NodeTable.from_objects(nodes) for _ in range(2)]
        for table in tables:
            for pod in placed:
                table.add_pod(pod, pod.node_name)
        whole, totals = tables
        before = _snapshot(whole)
        on_node = {pod.key: whole.slot_of(pod.node_name) for pod in placed}
        with (
            PodMoves(whole, totals_only=False) as whole_moves,
            PodMoves(totals, totals_only=True) as totals_moves,
        ):
            off: list[Placement] = []
            on: list[Placement] = []
            for _step in range(12):
                kind = rng.randrange(5)
                if kind == 4:  # every pod off one node (as preemption's dry run takes a node's victims)
                    slot = rng.randrange(6)
                    emptied = [(slot, pod) for pod in whole.pods[slot].values()]
                    off += emptied
                    on = [move for move in on if move not in emptied]
                    for moves in (whole_moves, totals_moves):
                        moves.remove_all([slot])
                    _same_totals(whole, totals)
                    continue
                if kind == 0:  # placed pods off
                    chosen = [(on_node[pod.key], pod) for pod in rng.sample(placed, 4)]
                    chosen = [move for move in chosen if move not in off]
                    off += chosen
                elif kind == 1 and off:  # one back
                    chosen = [off.pop(rng.randrange(len(off)))]
                    if chosen[0][1] in extra:  # an extra pod a node was emptied of: on again
                        on += chosen
                elif kind == 2:  # pods from nowhere on
                    chosen = [
                        (rng.randrange(6), pod) for pod in extra if all(pod is not p for _s, p in on + off)
                    ][:2]
                    on += chosen
                elif kind == 3 and on:  # one of those off again
                    chosen = [on.pop(rng.randrange(len(on)))]
                else:
                    continue
                adding = kind in (1, 2)
                for moves in (whole_moves, totals_moves):
                    (moves.add if adding else moves.remove)(chosen)
                _same_totals(whole, totals)
            assert all(totals.node_of_pod(pod.key) == pod.node_name for pod in placed)  # totals alone moved
        for table in tables:
            after = _snapshot(table)
            for old, new in zip(before, after, strict=True):
                if isinstance(old, np.ndarray):  # a pod's new resource may have widened the columns
                    assert isinstance(new, np.ndarray)
                    widened = np.zeros_like(new)
                    widened[tuple(slice(0, size) for size in old.shape)] = old
                    assert np.array_equal(widened, new), seed
                else:
                    assert old == new, seed


class _Unreadable(list[dict[str, PodInfo]]):
    """``table.pods`` that fails the test when read."""

    def __getitem__(self, item: object) -> Any:
        raise AssertionError("a Filter that says it reads only the node totals read table.pods")

    def __iter__(self) -> Any:
        raise AssertionError("a Filter that says it reads only the node totals read table.pods")


def test_filters_that_say_they_read_only_the_totals_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every default Filter with ``reads_node_pods = False``, each made to run (host port, node
    affinity, a taint, pod (anti-)affinity, hard spreading), never reads which pods are on a node."""
    zone, host = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
    nodes = [make_node(f"n{index}", labels={zone: f"z{index % 2}", host: f"n{index}"}) for index in range(4)]
    nodes[3]["spec"]["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    web = {"app": "web"}
    term = {"labelSelector": {"matchLabels": web}, "topologyKey": host}
    existing = [
        make_pod(
            "w0",
            node_name="n0",
            labels=web,
            affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        ),
        make_pod(
            "w1",
            node_name="n1",
            labels=web,
            containers=[container(ports=[{"containerPort": 80, "hostPort": 80}])],
        ),
    ]
    spread = {
        "maxSkew": 1,
        "topologyKey": zone,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": web},
    }
    pod = PodInfo.from_pod(
        make_pod(
            "p",
            labels=web,
            containers=[container(requests={"cpu": "1"}, ports=[{"containerPort": 80, "hostPort": 80}])],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": zone, "operator": "Exists"}]}]
                    }
                },
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{**term, "topologyKey": zone}]
                },
            },
            topologySpreadConstraints=[spread],
            nodeName="",
        )
    )
    framework = default_framework()
    table = table_of(nodes, existing)
    state = CycleState()
    assert framework.run_pre_filter_plugins(state, pod, table).is_success
    totals_only = [plugin for plugin in framework.filter_plugins if not plugin.reads_node_pods]
    names = {plugin.name for plugin in totals_only}
    assert names >= {
        "NodeResourcesFit",
        "NodePorts",
        "InterPodAffinity",
        "PodTopologySpread",
        "TaintToleration",
    }
    assert not names & state.skip_filter_plugins  # each of them runs

    def unreadable(*args: object) -> Any:
        raise AssertionError("a Filter that says it reads only the node totals read the pods")

    monkeypatch.setattr(table, "pods", _Unreadable(table.pods))
    for method in ("pods_in_namespace", "all_pods", "index", "node_of_pod"):
        monkeypatch.setattr(table, method, unreadable)
    for plugin in totals_only:
        plugin.filter(state, pod, table, table.node_order())
