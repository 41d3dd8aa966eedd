"""NodeAffinity: nodeSelector, required terms with every operator, matchFields, addedAffinity, scoring."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.framework.kubeobjects import make_node, pod_info, table_of
from tests.unit.plugins.pluginruns import raw_and_normalized, rejections

from secondary_scheduler.framework import CycleState, Handle, Status
from secondary_scheduler.framework.interface import PreFilterResult
from secondary_scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity

POD_REASON = "node(s) didn't match Pod's node affinity/selector [unresolvable]"

NODES = [
    make_node("a", labels={"zone": "z1", "cores": "8", "disk": "ssd"}),
    make_node("b", labels={"zone": "z2", "cores": "16"}),
    make_node("c", labels={"zone": "z3", "cores": "many"}),
    make_node("d"),
]


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def matching(
    affinity: dict[str, Any] | None = None, args: dict[str, Any] | None = None, **fields: Any
) -> list[str]:
    pod = pod_info("p", affinity=affinity, **fields) if affinity else pod_info("p", **fields)
    rejected = rejections(NodeAffinity(args, Handle()), pod, table_of(NODES))
    return [name for name in ("a", "b", "c", "d") if name not in rejected]


@pytest.mark.parametrize(
    ("term", "nodes"),
    [
        (expression("zone", "In", "z1", "z2"), ["a", "b"]),
        (expression("zone", "NotIn", "z1"), ["b", "c", "d"]),  # a missing label is "not in"
        (expression("disk", "Exists"), ["a"]),
        (expression("disk", "DoesNotExist"), ["b", "c", "d"]),
        (expression("cores", "Gt", "10"), ["b"]),  # "many" is not a number: no match
        (expression("cores", "Lt", "10"), ["a"]),
        (expression("cores", "Gt", "ten"), []),  # an invalid term matches nothing
        (expression("zone", "In"), []),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}, ["c"]),
        ({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["c"]}]}, ["a", "b", "d"]),
        ({}, []),  # an empty term matches nothing
    ],
)
def test_required_term_operators(term: dict[str, Any], nodes: list[str]) -> None:
    assert matching(required(term)) == nodes


def test_terms_are_ored_and_requirements_anded() -> None:
    both = {
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["z1", "z2"]},
            {"key": "cores", "operator": "Gt", "values": ["10"]},
        ]
    }
    assert matching(required(both)) == ["b"]
    assert matching(required(both, expression("zone", "In", "z3"))) == ["b", "c"]


def test_node_selector_and_affinity_must_both_match() -> None:
    assert matching(nodeSelector={"zone": "z1"}) == ["a"]
    assert matching(required(expression("zone", "In", "z1", "z2")), nodeSelector={"cores": "16"}) == ["b"]


def test_the_reason_and_its_code() -> None:
    pod = pod_info("p", nodeSelector={"zone": "z1"})
    assert rejections(NodeAffinity(None, Handle()), pod, table_of(NODES[:2])) == {"b": [POD_REASON]}


def test_added_affinity_applies_to_every_pod_with_its_own_reason() -> None:
    args = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [expression("zone", "In", "z1", "z2")]
            }
        }
    }
    pod = pod_info("p", nodeSelector={"zone": "z2"})
    assert rejections(NodeAffinity(args, Handle()), pod, table_of(NODES)) == {
        "a": [POD_REASON],
        "c": ["node(s) didn't match scheduler-enforced node affinity [unresolvable]"],
        "d": ["node(s) didn't match scheduler-enforced node affinity [unresolvable]"],
    }


def test_a_pod_without_node_constraints_skips_the_filter() -> None:
    assert matching() == ["a", "b", "c", "d"]


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    terms = [{"weight": weight, "preference": term} for weight, term in weighted]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


def test_preferred_terms_add_their_weights_and_normalize_to_100() -> None:
    affinity = preferred(
        (2, expression("zone", "In", "z1", "z2")), (6, expression("disk", "Exists")), (5, {})
    )
    raw, normalized = raw_and_normalized(
        NodeAffinity(None, Handle()), pod_info("p", affinity=affinity), table_of(NODES)
    )
    assert raw == {"a": 8, "b": 2, "c": 0, "d": 0}
    assert normalized == {"a": 100, "b": 25, "c": 0, "d": 0}


def test_added_preferred_terms_score_every_pod() -> None:
    args = {"addedAffinity": preferred((3, expression("zone", "In", "z3")))["nodeAffinity"]}
    normalized = raw_and_normalized(NodeAffinity(args, Handle()), pod_info("p"), table_of(NODES))[1]
    assert normalized == {"a": 0, "b": 0, "c": 100, "d": 0}


def test_without_preferences_scoring_is_skipped() -> None:
    assert raw_and_normalized(NodeAffinity(None, Handle()), pod_info("p"), table_of(NODES)) == ({}, {})


@pytest.mark.parametrize(
    ("term", "nodes"),
    [
        (expression("zone", "In", "z1", "z2"), ["a", "b"]),
        (expression("zone", "NotIn", "z1"), ["b", "c", "d"]),
        (expression("disk", "Exists"), ["a"]),
        (expression("disk", "DoesNotExist"), ["b", "c", "d"]),
        (expression("cores", "Gt", "10"), ["b"]),
        (expression("cores", "Lt", "10"), ["a"]),
        (expression("cores", "Gt", "ten"), []),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}, ["c"]),
        ({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["c"]}]}, ["a", "b", "d"]),
    ],
)
def test_one_node_object_matches_as_the_table_does(term: dict[str, Any], nodes: list[str]) -> None:
    """Queueing hints see single Node objects: the same answers as the vectorised filter."""
    pod = pod_info("p", affinity=required(term))
    assert [node["metadata"]["name"] for node in NODES if pod.required_node_affinity.matches(node)] == nodes


def node_change_hint(plugin: NodeAffinity) -> Any:
    [registration] = plugin.events_to_register()
    assert registration.hint is not None
    return registration.hint


def test_a_node_change_requeues_only_when_the_node_starts_to_match() -> None:
    """As kube-scheduler's isSchedulableAfterNodeChange: unmatched -> matched, or a new matching node."""
    hint = node_change_hint(NodeAffinity(None, Handle()))
    pod = pod_info("p", affinity=required(expression("disk", "Exists")))
    without, with_disk = make_node("e"), make_node("e", labels={"disk": "ssd"})
    assert hint(pod, without, with_disk)  # the label the pod needs was added
    assert not hint(pod, with_disk, without)  # removed: cannot help
    assert not hint(pod, with_disk, make_node("e", labels={"disk": "ssd", "x": "y"}))  # matched before
    assert hint(pod, None, with_disk)  # a new node that matches
    assert not hint(pod, None, without)


def test_a_node_change_must_match_the_profiles_added_affinity_too() -> None:
    added = {"addedAffinity": required(expression("zone", "In", "z1"))["nodeAffinity"]}
    hint = node_change_hint(NodeAffinity(added, Handle()))
    pod = pod_info("p")
    assert not hint(pod, None, make_node("e", labels={"zone": "z2"}))
    assert hint(pod, None, make_node("e", labels={"zone": "z1"}))


def name_field(operator: str, *names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": operator, "values": list(names)}


@pytest.mark.parametrize(
    ("terms", "result"),
    [
        ([{"matchFields": [name_field("In", "a")]}], frozenset({"a"})),  # a DaemonSet pod
        ([{"matchFields": [name_field("In", "a")]}, {"matchFields": [name_field("In", "b")]}], {"a", "b"}),
        ([{"matchFields": [name_field("In", "a", "b"), name_field("In", "b", "c")]}], {"b"}),  # ANDed
        ([{"matchFields": [name_field("In", "a")]}, expression("zone", "In", "z1")], None),  # any node
        ([{"matchFields": [name_field("NotIn", "a")]}], None),
        ([{"matchFields": [name_field("In", "a"), name_field("In", "b")]}], frozenset()),  # conflict
    ],
)
def test_prefilter_narrows_to_the_nodes_terms_name(terms: list[dict[str, Any]], result: Any) -> None:
    plugin = NodeAffinity(None, Handle())
    outcome = plugin.pre_filter(CycleState(), pod_info("p", affinity=required(*terms)), table_of(NODES))
    if result is None:
        assert outcome == Status()
    elif not result:
        assert outcome == Status.unschedulable("pod affinity terms conflict", unresolvable=True)
    else:
        assert outcome == PreFilterResult(frozenset(result))
