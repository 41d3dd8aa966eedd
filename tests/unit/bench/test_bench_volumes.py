"""The volumes section's pure parts: claims and pods, the placement check, the phases, the verdict."""

from __future__ import annotations

import math
from typing import Any

import pytest
from bench.__main__ import _sizes
from bench.stats import PodClock
from bench.storage import (
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    CLAIM_SIZES,
    STORAGE_CLASS,
    ClaimClock,
    Phases,
    claim_manifests,
    claim_of,
    pace_sentence,
    pace_setter,
    phases,
    pinned_nodes,
    placements,
    storage_rate,
    violations,
    volume_pod_manifests,
)

JSON = dict[str, Any]


def _pod(name: str, node: str = "", claim: str | None = None) -> JSON:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": claim or name}}]
    return {"metadata": {"name": name}, "spec": {"nodeName": node, "volumes": volumes}}


def _claim(name: str, volume: str = "", phase: str = "Bound", selected: str = "") -> JSON:
    annotations = {ANN_SELECTED_NODE: selected} if selected else {}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"volumeName": volume},
        "status": {"phase": phase},
    }


def _volume(name: str, *nodes: str, key: str = "kubernetes.io/hostname") -> JSON:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": list(nodes)}]}
    return {"metadata": {"name": name}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}


def test_claims_are_wffc_readwriteonce_with_the_same_sizes_for_the_same_seed() -> None:
    first = claim_manifests(["a", "b", "c", "d"], seed=3)
    assert first == claim_manifests(["a", "b", "c", "d"], seed=3)
    for claim in first:
        assert claim["spec"]["storageClassName"] == STORAGE_CLASS
        assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
        assert claim["spec"]["resources"]["requests"]["storage"] in CLAIM_SIZES
        assert "annotations" not in claim["metadata"]


def test_claims_for_the_storage_stack_alone_have_a_node_chosen_round_robin() -> None:
    claims = claim_manifests(["a", "b", "c"], selected_nodes=["n1", "n2"])
    assert [c["metadata"]["annotations"][ANN_SELECTED_NODE] for c in claims] == ["n1", "n2", "n1"]


def test_each_pod_mounts_the_claim_of_its_own_name() -> None:
    pods = volume_pod_manifests("o1", 3, "bench-scheduler", seed=5)
    assert [pod["metadata"]["name"] for pod in pods] == ["o1-00000", "o1-00001", "o1-00002"]
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "bench-scheduler"
        assert claim_of(pod) == pod["metadata"]["name"]
        mounts = pod["spec"]["containers"][0]["volumeMounts"]
        assert mounts == [{"name": "data", "mountPath": "/data"}]
        assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    assert claim_of({"spec": {"volumes": [{"name": "x", "emptyDir": {}}]}}) is None


def test_pinned_nodes_reads_hostname_in_terms() -> None:
    assert pinned_nodes(_volume("pv", "n1")) == {"n1"}
    two_terms = _volume("pv", "n1")
    two_terms["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"].append(
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}
    )
    assert pinned_nodes(two_terms) == {"n1", "n2"}
    assert pinned_nodes(_volume("pv", "zone-a", key="topology.kubernetes.io/zone")) == set()
    assert pinned_nodes({"metadata": {"name": "pv"}, "spec": {}}) is None


def test_a_pod_whose_volume_is_on_another_node_is_a_violation() -> None:
    pods = [
        _pod("good", "n1"),
        _pod("wrong", "n2"),
        _pod("pending-claim", "n3"),
        _pod("not-bound"),
        _pod("lost-volume", "n4"),
        {"metadata": {"name": "no-claim"}, "spec": {"nodeName": "n5"}},
    ]
    claims = [
        _claim("good", "pv-good", selected="n1"),
        _claim("wrong", "pv-wrong", selected="n2"),
        _claim("pending-claim", phase="Pending"),
        _claim("not-bound", phase="Pending"),
        _claim("lost-volume", "pv-gone"),
    ]
    volumes = [_volume("pv-good", "n1"), _volume("pv-wrong", "n1")]
    found = placements(pods, claims, volumes)
    assert [p.pod for p in found] == ["good", "wrong", "pending-claim", "not-bound", "lost-volume"]
    assert found[0].volume_nodes == ("n1",) and found[0].selected_node == "n1"
    assert violations(found) == [
        "pod wrong on n2: its volume pv-wrong is pinned to n1",
        "pod pending-claim on n3: claim pending-claim is Pending, not Bound",
        "pod lost-volume on n4: claim lost-volume is bound to pv-gone, which does not exist",
    ]


def test_a_missing_claim_is_a_violation_for_a_bound_pod() -> None:
    found = placements([_pod("p", "n1")], [], [])
    assert violations(found) == ["pod p on n1: claim p is missing, not Bound"]


def _claim_event(name: str, selected: bool = False, handed: bool = False, bound: bool = False) -> JSON:
    annotations = {}
    if selected:
        annotations[ANN_SELECTED_NODE] = "n1"
    if handed:
        annotations[ANN_STORAGE_PROVISIONER] = "local.secsched.io"
    return {
        "metadata": {"name": name, "annotations": annotations},
        "status": {"phase": "Bound" if bound else ""},
    }


def test_phases_follow_a_pod_from_creation_to_bound() -> None:
    pods, claims = PodClock(), ClaimClock()
    for index, name in enumerate(["a", "b"]):
        offset = index * 1.0
        claims.saw_claim(_claim_event(name), 0.0)
        pods.create_returned(name, 10.0 + offset)
        claims.saw_claim(_claim_event(name, selected=True), 10.5 + offset)
        claims.saw_claim(_claim_event(name, selected=True, handed=True), 10.7 + offset)
        volume = {"spec": {"claimRef": {"namespace": "ns", "name": name}}}
        claims.saw_volume(volume, 11.0 + offset, "ns")
        claims.saw_volume(volume, 12.0 + offset, "ns")  # a later event does not count
        claims.saw_volume({"spec": {"claimRef": {"namespace": "other", "name": "x"}}}, 11.0, "ns")
        claims.saw_claim(_claim_event(name, selected=True, handed=True, bound=True), 11.5 + offset)
        pods.saw(name, 12.0 + offset, "n1")
    result = phases(pods, claims, ["a", "b"])
    assert result.p50 == pytest.approx(
        {"scheduled": 0.5, "handed over": 0.2, "provisioned": 0.3, "volume bound": 0.5, "pod bound": 0.5}
    )
    assert math.isclose(result.decided_rate, 2 / 1.5)  # 2 claims from 10.0 to 11.5
    assert math.isclose(result.provisioned_rate, 2 / 2.0)  # Bound from 10.5 to 12.5
    assert "x" not in claims.provisioned
    assert claims.bound_count(["a", "b", "c"]) == 2


def test_the_storage_stack_alone_counts_from_the_first_claim_created() -> None:
    claims = ClaimClock()
    claims.create_returned("a", 1.0)
    claims.saw_claim(_claim_event("a", selected=True), 0.9)  # the watch was first
    claims.create_returned("b", 1.2)
    claims.saw_claim(_claim_event("a", selected=True, bound=True), 2.9)
    claims.saw_claim(_claim_event("b", selected=True, bound=True), 3.1)
    rate, latencies = storage_rate(claims, ["a", "b"])
    assert math.isclose(rate, 2 / (3.1 - 0.9))
    assert [round(value, 6) for value in latencies] == [2.0, 1.9]
    alone = phases(None, claims, ["a", "b"])
    assert math.isnan(alone.p50["scheduled"]) and math.isnan(alone.p50["pod bound"])
    assert math.isclose(alone.provisioned_rate, rate)
    assert math.isnan(storage_rate(ClaimClock(), ["a"])[0])


def test_who_set_the_pace() -> None:
    # bound nearly as fast as the storage stack manages alone
    assert pace_setter(50.0, 52.0, [58.0, math.nan]) == "storage"
    # claims queued although nodes were chosen as fast as the storage stack binds alone
    assert pace_setter(20.0, 60.0, [58.0]) == "storage"
    # no claims queued, well below the storage stack's pace
    assert pace_setter(3.0, 3.0, [38.0, 58.7]) == "scheduler"
    # claims queued, and nodes were chosen below the storage stack's pace too
    assert pace_setter(23.5, 31.4, [58.7, 38.0]) == "both"
    assert pace_setter(26.6, 36.7, [45.1, 37.4]) == "both"
    assert pace_setter(20.0, 40.0, []) == "storage"
    assert pace_setter(20.0, math.nan, []) == "scheduler"


def test_pace_sentences_name_the_stage_and_the_numbers() -> None:
    found = Phases(
        p50={"scheduled": 6.0, "handed over": 1.5, "provisioned": 0.9, "volume bound": 1.2, "pod bound": 0.6},
        decided_rate=31.4,
        provisioned_rate=24.5,
    )
    text = pace_sentence("ours", 23.5, found, 19.3, [58.7, 38.0])
    assert text.startswith(
        "**ours** chose nodes at 31.4 claims/s and its pods were bound at 23.5/s (the storage stack "
        "alone binds 38.0-58.7 claims/s): both limited it."
    )
    assert "median 6,000 ms from pod creation to node choice, 3,600 ms from there to claim Bound" in text
    slow = Phases(p50={"scheduled": 85.0, "handed over": 0.0, "provisioned": 0.1, "volume bound": 0.01})
    slow.decided_rate = 3.0
    text = pace_sentence("upstream", 3.0, slow, 514.2, [58.7])
    assert "(the storage stack alone binds 58.7 claims/s): the scheduler set the pace" in text
    assert "514.2 ms of scheduler CPU per pod" in text
    queued = Phases(p50=dict(found.p50), decided_rate=60.0)
    assert "the storage stack set the pace" in pace_sentence("ours", 20.0, queued, 2.0, [58.0])


def test_volumes_measure_at_1000_nodes_unless_sizes_are_given() -> None:
    assert _sizes(None, ["volumes"]) == ((1000,), (1000,))
    assert _sizes(None, ["throughput", "volumes", "placement"]) == ((100, 1000, 5000), (1000,))
    assert _sizes((100, 5000), ["volumes"]) == ((100, 5000), (100, 5000))
