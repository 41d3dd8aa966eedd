"""NodeResourceTopologyMatch's Score: each strategy's numbers, worked out by hand from upstream's formulas."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.plugins.noderesourcetopology.nrtharness import Run
from tests.unit.plugins.noderesourcetopology.nrtobjects import container, guaranteed, node, nrt, pod, zone

COSTS = {0: 10, 1: 20}
ZONES = [zone(0, COSTS, cpu="4", memory="8Gi"), zone(1, {0: 20, 1: 10}, cpu="2", memory="4Gi")]


def score(
    strategy: str, p: dict, scope: str = "container", policy: str = "single-numa-node", **args: object
) -> int:
    harness = Run(
        [node("n")], [nrt("n", ZONES, policy, scope)], {"scoringStrategy": {"type": strategy, **args}}
    )
    return harness.score(p)["n"]


# zone 0: cpu 1/4, memory 1Gi/8Gi; zone 1: cpu 1/2, memory 1Gi/4Gi
@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("LeastAllocated", 62),  # zone 0: (75 + 87) / 2 = 81; zone 1: (50 + 75) / 2 = 62; lowest
        ("MostAllocated", 18),  # zone 0: (25 + 12) / 2 = 18; zone 1: (50 + 25) / 2 = 37
        ("BalancedAllocation", 96),  # zone 1: 1 - var(.5, .25) = 1 - .03125 -> 96.875
        ("LeastNUMANodes", 94),  # one zone of maxNUMANodes 8: 100 - 12, best distance: + 6
    ],
)
def test_each_strategy_scores_as_upstream(strategy: str, expected: int) -> None:
    assert score(strategy, guaranteed("p", "1")) == expected


def test_weights_apply_to_listed_resources_and_others_count_one() -> None:
    weighted: dict[str, Any] = {"resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]}
    # zone 0: (75 * 3 + 87) / 4 = 78; zone 1: (50 * 3 + 75) / 4 = 56
    assert score("LeastAllocated", guaranteed("p", "1"), **weighted) == 56


def test_container_scope_averages_the_containers() -> None:
    two = pod("p", container("a", "1", "1Gi"), container("b", "2", "2Gi"))
    # a: 62 (above); b: zone 0 (50 + 75) / 2 = 62, zone 1 (0 + 50) / 2 = 25 -> 25; mean 43.5 -> 43
    assert score("LeastAllocated", two) == 43


def test_pod_scope_scores_the_effective_request() -> None:
    two = pod("p", container("a", "1", "1Gi"), container("b", "1", "1Gi"))
    # 2 cpu, 2Gi: zone 0 (50 + 75) / 2 = 62; zone 1 (0 + 50) / 2 = 25
    assert score("LeastAllocated", two, scope="pod") == 25


def test_a_zone_too_small_scores_zero_and_is_skipped_by_the_lowest_rule() -> None:
    # 3 cpus: zone 1 scores 0 on cpu: (0 + 75) / 2 = 37 is not 0, zone 0: (25 + 87) / 2 = 56
    assert score("LeastAllocated", guaranteed("p", "3")) == 37


def test_least_numa_nodes_counts_zones_and_distance() -> None:
    # 5 cpus need both zones: 100 - 2 * 12 = 76, the only pair is the best distance: + 6
    assert score("LeastNUMANodes", guaranteed("p", "5")) == 82
    # 7 cpus fit no combination
    assert score("LeastNUMANodes", guaranteed("p", "7")) == 0


def test_least_numa_nodes_scores_any_policy_the_others_only_single_numa_node() -> None:
    assert score("LeastNUMANodes", guaranteed("p", "1"), policy="restricted") == 94
    assert score("LeastAllocated", guaranteed("p", "1"), policy="restricted") == 0


def test_max_numa_nodes_attribute_changes_the_step() -> None:
    obj = nrt("n", ZONES)
    obj["attributes"].append({"name": "topologyManagerMaxNUMANodes", "value": "2"})
    harness = Run([node("n")], [obj], {"scoringStrategy": {"type": "LeastNUMANodes"}})
    assert harness.score(guaranteed("p", "1"))["n"] == 75  # 100 - 50 + 25


def test_non_guaranteed_pods_get_the_maximum_and_nodes_without_topology_zero() -> None:
    harness = Run([node("n"), node("bare")], [nrt("n", ZONES)])
    assert harness.score(pod("p", container("a", "1", "1Gi", guaranteed=False))) == {"n": 100, "bare": 100}
    assert harness.score(guaranteed("p", "1")) == {"n": 62, "bare": 0}


def test_the_note_shows_each_zones_score() -> None:
    harness = Run([node("n")], [nrt("n", ZONES)])
    harness.score(guaranteed("p", "1"))
    assert harness.note() == ["n (LeastAllocated): app: zones 0=81, 1=62 -> 62"]


def test_balanced_allocation_of_one_resource_is_gos_nan_conversion() -> None:
    from decimal import Decimal

    from secondary_scheduler.plugins.noderesourcetopology.scoring import GO_NAN_TO_INT64, balanced_allocation

    assert balanced_allocation({"cpu": Decimal(1)}, {"cpu": Decimal(4)}, {}) == GO_NAN_TO_INT64
