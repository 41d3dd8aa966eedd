"""The table's incremental pod indexes agree with a count from scratch after any sequence of changes."""

from __future__ import annotations

import random

from tests.unit.framework.kubeobjects import make_node, make_pod

from secondary_scheduler.framework.labels import LabelSelector
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.interpodaffinity.index import AffinityIndex, affinity_index
from secondary_scheduler.plugins.podtopologyspread.common import SpreadIndex, spread_index

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _node(index: int, zone: str) -> dict[str, object]:
    return make_node(f"n{index}", labels={HOST: f"n{index}", ZONE: zone})


def _term(color: str, key: str) -> dict[str, object]:
    return {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": key}


def _pod(rng: random.Random, index: int) -> PodInfo:
    color = rng.choice(["red", "green", "blue"])
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(rng.choice(["red", "green"]), HOST)],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 5), "podAffinityTerm": _term(color, ZONE)}
            ],
        },
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("blue", ZONE)]},
    }
    terminating = {"deletionTimestamp": "2026-01-01T00:00:00Z"} if rng.random() < 0.1 else {}
    pod = make_pod(
        f"p{index}",
        namespace=rng.choice(["a", "b"]),
        labels={"color": color},
        affinity=affinity if rng.random() < 0.6 else {},
    )
    pod["metadata"].update(terminating)
    return PodInfo.from_pod(pod)


def _selections(index: AffinityIndex, pod: PodInfo) -> list[object]:
    terms = [pod.required_affinity_terms, *((term,) for term in pod.required_anti_affinity_terms)]
    return [index.selection(tuple(group)).counts for group in terms if group]


def test_indexes_follow_placements_removals_and_relabelling() -> None:
    rng = random.Random(5)
    table = NodeTable()
    for index in range(12):
        table.add_node(_node(index, f"z{index % 3}"))
    probes = [_pod(rng, 1000 + index) for index in range(6)]
    selectors = [LabelSelector.parse({"matchLabels": {"color": color}}) for color in ("red", "green")]
    live_affinity = affinity_index(table)
    live_spread = spread_index(table)
    for probe in probes:  # selections built early are the ones kept up to date longest
        _selections(live_affinity, probe)
    for selector in selectors:
        live_spread.counts("a", selector)
    placed: list[str] = []
    for step in range(400):
        action = rng.random()
        if action < 0.55 or not placed:
            pod = _pod(rng, step)
            table.add_pod(pod, f"n{rng.randrange(14)}")  # n12, n13: nodes that come later
            placed.append(pod.key)
        elif action < 0.85:
            table.remove_pod(placed.pop(rng.randrange(len(placed))))
        elif action < 0.95:
            node = rng.randrange(14)
            table.add_node(_node(node, f"z{rng.randrange(4)}"))  # relabel (or add)
        else:
            table.remove_node(f"n{rng.randrange(14)}")
    fresh_affinity = AffinityIndex(table)
    fresh_spread = SpreadIndex(table)
    assert {k: v for k, v in live_affinity.required_anti_affinity.items() if v} == {
        k: v for k, v in fresh_affinity.required_anti_affinity.items() if v
    }
    assert {k: v for k, v in live_affinity.scoring_terms.items() if v} == {
        k: v for k, v in fresh_affinity.scoring_terms.items() if v
    }
    for probe in probes:
        assert _selections(live_affinity, probe) == _selections(fresh_affinity, probe)
    for selector in selectors:
        live = live_spread.counts("a", selector)
        fresh = fresh_spread.counts("a", selector)
        assert live[: table.capacity].tolist() == fresh[: table.capacity].tolist()
