"""The placement section's pure parts in memory: bursts of the fleet, each run's measures, issue 38's
targets against the anchors, and how alike two schedulers' runs of one profile are."""

from __future__ import annotations

import pytest
from bench.placement import METRICS_LAG, bursts, ours_overrides
from bench.placement_report import HEADER, Outcome, agreement, busy_share, table, targets

BEFORE = {"a": 0.20, "b": 0.50, "c": 0.80}


def outcome(
    profile: str, after: dict[str, float], placements: dict[str, str], scheduler: str = "ours"
) -> Outcome:
    return Outcome(profile, scheduler, BEFORE, after, placements, seconds=12.0)


def test_bursts_split_in_order_the_first_ones_larger() -> None:
    assert bursts(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert bursts(list(range(4)), 1) == [[0, 1, 2, 3]]


@pytest.mark.parametrize("count", [0, 5])
def test_bursts_refuse_a_count_out_of_range(count: int) -> None:
    with pytest.raises(ValueError, match=f"bursts={count}"):
        bursts(list(range(4)), count)


def test_measures_tell_nodes_pushed_over_from_nodes_over_at_the_start() -> None:
    run = outcome("x", {"a": 0.30, "b": 0.75, "c": 0.95}, {"vm1": "b", "vm2": "b", "vm3": "a"})
    assert run.measures(70) == {
        "nodes over target": 2,
        "of them over at the start": 1,
        "nodes pushed over target": 1,
        "nodes above 90 %": 1,
        "VMs on nodes over target": 2,
        "nodes in use": 2,
    }
    assert len(table([run], 70)[0]) == len(HEADER)


def test_targets_compare_with_the_anchors() -> None:
    ours = outcome("LoadAwarePacking", {"a": 0.65, "b": 0.60, "c": 0.80}, {"vm1": "a", "vm2": "b"})
    packing = outcome("TargetLoadPacking", {"a": 0.75, "b": 0.60, "c": 0.85}, {"vm1": "a", "vm2": "c"})
    spreading = outcome("default", {"a": 0.60, "b": 0.75, "c": 0.95}, {"vm1": "a", "vm2": "b", "vm3": "c"})
    verdicts = {verdict.name: verdict for verdict in targets(ours, [packing, spreading], 70)}
    assert not verdicts["0 nodes over target"].met  # c started over target
    assert "1 already over" in verdicts["0 nodes over target"].detail
    assert verdicts["0 nodes above 90 %"].met
    assert verdicts["nodes in use ≤ TargetLoadPacking's"].met
    best = verdicts["VMs on nodes over target ≤ 0.2× the best anchor's"]
    assert best.met and "0 vs 2" in best.detail


def test_agreement_counts_vms_on_the_same_node() -> None:
    upstream = outcome("TargetLoadPacking", {"a": 0.5}, {"vm1": "a", "vm2": "b"}, "upstream")
    ours = outcome("TargetLoadPacking", {"a": 0.5}, {"vm1": "a", "vm2": "a"})
    assert agreement(upstream, ours, 70).startswith("50% of VMs on the same node")


def test_busy_share_weighs_nodes_by_their_cores() -> None:
    assert busy_share({"a": 0.5, "b": 0.8}, {"a": 8, "b": 32}) == pytest.approx((4 + 25.6) / 40)


def test_ours_overrides_read_yaml_values_over_the_section_metrics_lag() -> None:
    assert ours_overrides([]) == {"metricsLag": METRICS_LAG}
    assert ours_overrides(["spillCeiling=88", "metricsLag=4s"]) == {"spillCeiling": 88, "metricsLag": "4s"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        ours_overrides(["spillCeiling"])
