"""The example plugins in memory: a NodeTable of a few nodes, a pod, the plugin's methods.

Nothing here needs a cluster or the scheduler's runtime: a plugin is a class built with its
validated args and a Handle, and its Filter/Score take candidate slots of a NodeTable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError
from secsched_example_plugins import (
    AvoidNodeLabel,
    NodeLabelPreference,
    NodeLabelPreferenceArgs,
)

from secondary_scheduler.pluginapi import (
    NODE,
    ActionType,
    Code,
    CycleState,
    ExtensionPoint,
    Handle,
    NodeTable,
    PodInfo,
)

TIER = "example.com/tier"
DRAINING = "example.com/draining"


def pod(name: str = "p", labels: dict[str, str] | None = None) -> PodInfo:
    metadata = {"name": name, "namespace": "ns", "labels": labels or {}}
    return PodInfo.from_pod({"metadata": metadata, "spec": {}})


def table_of(*labels: dict[str, str]) -> NodeTable:
    """Nodes n0, n1, ... with these labels."""
    return NodeTable.from_objects(
        {"metadata": {"name": f"n{i}", "labels": dict(node_labels)}, "status": {"allocatable": {"cpu": "8"}}}
        for i, node_labels in enumerate(labels)
    )


def preference(**args: Any) -> NodeLabelPreference:
    """The plugin as a profile builds it from ``pluginConfig[].args`` (camelCase keys, validated)."""
    return NodeLabelPreference.build(args, Handle())


def avoid(**args: Any) -> AvoidNodeLabel:
    return AvoidNodeLabel.build(args, Handle())


# -- NodeLabelPreference -------------------------------------------------------------------


def test_preferred_values_score_by_rank_and_the_rest_score_zero() -> None:
    table = table_of({TIER: "silver"}, {TIER: "gold"}, {}, {TIER: "bronze"}, {TIER: "gold"})
    plugin = preference(label=TIER, preferredValues=["gold", "silver"])
    state, nodes = CycleState(), table.active_slots()
    assert plugin.pre_score(state, pod(), table, nodes).is_success
    assert plugin.score(state, pod(), table, nodes).tolist() == [50, 100, 0, 0, 100]
    assert state.notes["NodeLabelPreference"].lines() == [
        f"label {TIER}: gold=100 on 2 node(s), silver=50 on 1 node(s), other or none=0 on 2 node(s)"
    ]


def test_scores_follow_the_candidates_order_and_subset() -> None:
    table = table_of({TIER: "silver"}, {TIER: "gold"}, {TIER: "copper"})
    plugin = preference(label=TIER, preferredValues=["gold", "silver", "copper"])
    nodes = np.array([2, 0], dtype=np.intp)
    assert plugin.score(CycleState(), pod(), table, nodes).tolist() == [33, 66]


def test_score_without_pre_score_computes_the_same() -> None:
    """A profile may enable the plugin under `score` only: PreScore then never runs."""
    table = table_of({TIER: "gold"}, {})
    plugin = preference(label=TIER, preferredValues=["gold"])
    assert plugin.score(CycleState(), pod(), table, table.active_slots()).tolist() == [100, 0]


def test_pre_score_skips_when_no_node_has_a_preferred_value() -> None:
    table = table_of({TIER: "bronze"}, {})
    state = CycleState()
    plugin = preference(label=TIER, preferredValues=["gold"])
    status = plugin.pre_score(state, pod(), table, table.active_slots())
    assert status.code == Code.SKIP


def test_a_node_relabelled_after_the_first_cycle_scores_by_its_new_value() -> None:
    table = table_of({TIER: "silver"}, {})
    plugin = preference(label=TIER, preferredValues=["gold", "silver"])
    assert plugin.score(CycleState(), pod(), table, table.active_slots()).tolist() == [50, 0]
    table.update_node({"metadata": {"name": "n1", "labels": {TIER: "gold"}}, "status": {}})
    assert plugin.score(CycleState(), pod(), table, table.active_slots()).tolist() == [50, 100]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"label": TIER, "preferredValues": []}, "at least 1 item"),
        ({"label": TIER, "preferredValues": ["gold", "gold"]}, "gold listed more than once"),
        ({"label": "not a key", "preferredValues": ["gold"]}, "not a valid label key"),
        ({"label": "-bad.prefix/tier", "preferredValues": ["gold"]}, "prefix must be a DNS subdomain"),
        ({"preferredValues": ["gold"]}, "label"),
        ({"label": TIER, "preferredValues": ["gold"], "weight": 3}, "weight"),
    ],
)
def test_preference_args_are_validated(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        NodeLabelPreferenceArgs.model_validate(args)


# -- AvoidNodeLabel ------------------------------------------------------------------------


def test_nodes_with_the_label_are_rejected_with_a_clear_reason() -> None:
    table = table_of({DRAINING: "true"}, {}, {DRAINING: "false"})
    [rejection] = avoid(label=DRAINING).filter(CycleState(), pod(), table, table.active_slots())
    assert rejection.mask.tolist() == [True, False, True]
    assert rejection.reason == f"node(s) had label {DRAINING}, which this profile avoids"
    assert rejection.unresolvable  # evicting pods would not help: no preemption


def test_only_the_listed_values_are_avoided() -> None:
    table = table_of({DRAINING: "true"}, {}, {DRAINING: "false"})
    plugin = avoid(label=DRAINING, values=["true", "yes"])
    [rejection] = plugin.filter(CycleState(), pod(), table, table.active_slots())
    assert rejection.mask.tolist() == [True, False, False]
    assert rejection.reason == (
        f"node(s) had label {DRAINING} with value true or yes, which this profile avoids"
    )


def test_no_rejection_when_no_candidate_has_the_label() -> None:
    table = table_of({}, {TIER: "gold"})
    assert avoid(label=DRAINING).filter(CycleState(), pod(), table, table.active_slots()) == []


def test_a_pod_with_the_opt_out_label_may_use_avoided_nodes() -> None:
    table = table_of({DRAINING: "true"})
    plugin = avoid(label=DRAINING, podOptOutLabel="example.com/ignore-draining")
    opted_out = pod(labels={"example.com/ignore-draining": ""})
    assert plugin.filter(CycleState(), opted_out, table, table.active_slots()) == []
    assert len(plugin.filter(CycleState(), pod(), table, table.active_slots())) == 1


def test_a_rejected_pod_is_retried_only_when_a_node_without_the_label_appears() -> None:
    plugin = avoid(label=DRAINING)
    [registration] = plugin.events_to_register()
    assert registration.event.resource == NODE
    assert registration.event.actions == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    assert registration.hint is not None
    assert registration.hint(pod(), None, {"metadata": {"name": "new"}})
    assert not registration.hint(pod(), None, {"metadata": {"name": "new", "labels": {DRAINING: "x"}}})


def test_the_extension_points_come_from_the_bases() -> None:
    assert NodeLabelPreference.extension_points() == {ExtensionPoint.PRE_SCORE, ExtensionPoint.SCORE}
    assert AvoidNodeLabel.extension_points() == {ExtensionPoint.FILTER}
