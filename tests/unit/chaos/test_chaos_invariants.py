"""The chaos run's pure parts: its invariants on a final state, its recovery figures, its workload,
its fault plan and the doc section it rewrites."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from bench.chaos import faults, invariants, report, workload
from bench.chaos.invariants import FinalState
from bench.workloadclasses import HOSTNAME_KEY, ZONE_KEY, Node

JSON = dict[str, Any]


def node(name: str, zone: str = "zone-a", taints: list[JSON] | None = None) -> JSON:
    return {
        "metadata": {"name": name, "labels": {ZONE_KEY: zone, HOSTNAME_KEY: name}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        },
    }


def pod(
    name: str,
    on: str | None = None,
    cpu: str = "1",
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> JSON:
    return {
        "metadata": {"name": name, "namespace": "chaos", "uid": uid or f"uid-{name}", "labels": labels or {}},
        "spec": {
            "nodeName": on,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
            **spec,
        },
        "status": {},
    }


def scheduled(name: str, uid: str | None = None, instance: str = "ours-a") -> JSON:
    return {
        "reason": "Scheduled",
        "regarding": {"kind": "Pod", "name": name, "uid": uid or f"uid-{name}"},
        "reportingInstance": instance,
    }


def preempted(victim: str, preemptor_uid: str, on: str) -> JSON:
    return {
        "reason": "Preempted",
        "regarding": {"kind": "Pod", "name": victim},
        "note": f"Preempted by pod {preemptor_uid} on node {on}",
    }


def state(pods: list[JSON], events: list[JSON] | None = None, **fields: Any) -> FinalState:
    nodes = fields.pop("nodes", [node("n1"), node("n2", "zone-b")])
    expected = fields.pop("expected", [p["metadata"]["name"] for p in pods])
    return FinalState(
        pods=pods,
        nodes=nodes,
        claims=[],
        volumes=[],
        events=events or [],
        namespace="chaos",
        expected=expected,
        fillers=fields.pop("fillers", []),
        gangs=fields.pop("gangs", {}),
    )


def test_a_clean_final_state_breaks_nothing() -> None:
    pods = [pod("a", "n1"), pod("b", "n2")]
    assert invariants.check(state(pods, [scheduled("a"), scheduled("b")])) == []


def test_a_pod_left_pending_or_gone_is_a_violation() -> None:
    found = invariants.check(state([pod("a", "n1"), pod("b")], expected=["a", "b", "c"]))
    assert "bound: b never bound" in found
    assert any(text.startswith("bound: c is gone") for text in found)


def test_two_scheduled_events_for_one_pod_are_a_double_binding() -> None:
    events = [scheduled("a", instance="ours-a"), scheduled("a", instance="ours-b"), scheduled("b")]
    found = invariants.bound_twice(events)
    assert found == ["bound once: a (uid-a) has 2 Scheduled Events, from ['ours-a', 'ours-b']"]
    # The same name again after a delete and create is another pod.
    assert invariants.bound_twice([scheduled("a", "one"), scheduled("a", "two")]) == []


def test_a_node_over_its_allocatable_is_a_violation() -> None:
    found = invariants.check(state([pod("a", "n1", cpu="3"), pod("b", "n1", cpu="2")]))
    assert invariants.by_rule(found) == {"resources": 1}, found


def test_required_anti_affinity_on_one_node_is_a_violation() -> None:
    term = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOSTNAME_KEY}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    pods = [pod(name, "n1", labels={"color": "green"}, affinity=affinity) for name in ("a", "b")]
    assert "anti-affinity" in invariants.by_rule(invariants.check(state(pods)))


def test_a_spread_over_its_skew_is_a_violation() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE_KEY,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": "purple"}},
        }
    ]
    pods = [
        pod(name, "n1", cpu="100m", labels={"color": "purple"}, topologySpreadConstraints=spread)
        for name in "ab"
    ]
    found = invariants.check(state(pods))
    assert len(found) == 1 and "spread" in found[0], found


def test_a_gang_partly_bound_is_a_violation() -> None:
    found = invariants.check(state([pod("g-0", "n1"), pod("g-1")], gangs={"g": ["g-0", "g-1"]}))
    assert "gangs: g: 1/2 bound" in found


def test_a_pod_on_a_taint_it_does_not_tolerate_is_a_violation() -> None:
    taint = {"key": workload.PREEMPTION_TAINT, "value": "true", "effect": "NoSchedule"}
    nodes = [node("n1", taints=[taint])]
    tolerating = pod("t", "n1", tolerations=[{"key": workload.PREEMPTION_TAINT, "operator": "Exists"}])
    found = invariants.untolerated([pod("a", "n1"), tolerating], nodes)
    assert found == [f"taints: a is on n1, whose taint {workload.PREEMPTION_TAINT} it does not tolerate"]


def test_a_victim_needs_its_preemptor_bound_or_nominated_on_its_node() -> None:
    bound = pod("p", "n1", uid="u-p")
    nominated = pod("q", uid="u-q")
    nominated["status"]["nominatedNodeName"] = "n2"
    stranded = pod("r", uid="u-r")
    events = [
        preempted("filler-n1", "u-p", "n1"),
        preempted("filler-n2", "u-q", "n2"),
        preempted("x", "u-r", "n1"),
    ]
    found = invariants.preemptions(state([bound, nominated, stranded], events, expected=[]))
    assert found == [
        "preemption: x was evicted from n1 for r, which is neither bound nor nominated there "
        "(bound to nothing)"
    ]
    gone = invariants.preemptions(state([], [preempted("y", "u-z", "n1")], expected=[]))
    assert gone == ["preemption: y was evicted for pod u-z, which is gone"]


def test_a_filler_gone_with_no_preemptor_on_its_node_is_a_violation() -> None:
    kept = pod("filler-n2", "n2")
    found = invariants.preemptions(state([kept], expected=[], fillers=["filler-n1", "filler-n2"]))
    assert found == ["preemption: filler filler-n1 on n1 is gone, and no pod is bound to or nominated for it"]
    assert invariants.preemptions(state([pod("p", "n1")], expected=[], fillers=["filler-n1"])) == []


def test_events_lost_are_the_bound_pods_without_a_scheduled_event() -> None:
    pods = [pod("a", "n1"), pod("b", "n1"), pod("c")]
    assert invariants.events_lost(pods, [scheduled("a")]) == ["b"]


def test_recovery_is_the_time_from_each_faults_end_to_the_next_binding() -> None:
    found = invariants.recovery(
        [("kill", 10.0, 0.0), ("kill", 20.0, 0.0), ("stop", 30.0, 0.0), ("leader", 40.0, 0.5)],
        [5.0, 11.5, 22.0, 25.0, 40.2, 43.0],
    )
    # 40.2 is the dead leader's binding, still in flight when it was killed.
    assert found.seconds == {"kill": [1.5, 2.0], "stop": [pytest.approx(10.2)], "leader": [3.0]}
    assert found.summary("kill") == (2, 1.5, 2.0, 0)
    found = invariants.recovery([("stop", 30.0, 0.0)], [5.0])
    count, p50, highest, missing = found.summary("stop")
    assert (count, missing) == (1, 1) and math.isnan(p50) and math.isnan(highest)


def nodes(count: int) -> list[Node]:
    return [
        Node(f"kwok-node-{i}", {ZONE_KEY: f"zone-{'abc'[i % 3]}", HOSTNAME_KEY: f"kwok-node-{i}"})
        for i in range(count)
    ]


def test_the_burst_mixes_every_kind_and_keeps_preemption_on_its_tainted_nodes() -> None:
    burst = workload.build(nodes(40), 300, "chaos-scheduler", seed=3)
    assert len(burst.pods) == 300 == len(set(burst.names))
    assert set(burst.counts()) == {"plain", "spread", "anti", "pvc", "gang", "preemptor"}
    assert burst.tainted_nodes == ["kwok-node-38", "kwok-node-39"]
    assert [filler["spec"]["nodeName"] for filler in burst.fillers] == burst.tainted_nodes
    assert sum(group["spec"]["minMember"] for group in burst.podgroups) == burst.counts()["gang"]
    assert len(burst.claims) == burst.counts()["pvc"]
    for manifest in burst.pods:
        tolerates = bool(manifest["spec"].get("tolerations"))
        assert tolerates == (manifest["metadata"]["labels"]["chaos-kind"] == "preemptor")
    # A gang's pods come one after another.
    for group in burst.podgroups:
        positions = [
            i for i, name in enumerate(burst.names) if name.startswith(group["metadata"]["name"] + "-")
        ]
        assert positions == list(range(positions[0], positions[0] + group["spec"]["minMember"]))
    assert workload.build(nodes(40), 300, "chaos-scheduler", seed=3).names == burst.names


def test_a_burst_too_small_for_its_kinds_is_refused() -> None:
    with pytest.raises(ValueError, match="pods=5"):
        workload.kind_counts(5, 100)
    with pytest.raises(ValueError, match="nodes=3"):
        workload.kind_counts(100, 3)


def test_the_fault_plan_injects_each_kind_as_often_as_asked() -> None:
    order = faults.plan(faults.KINDS, 3, seed=1)
    assert sorted(order) == sorted(faults.KINDS * 3)
    assert order == faults.plan(faults.KINDS, 3, seed=1)
    with pytest.raises(ValueError, match="unknown fault kinds"):
        faults.plan(("etcd-explode",), 1, 0)


def test_the_chaos_section_is_rewritten_and_the_rest_of_the_page_kept(tmp_path: Path) -> None:
    page = tmp_path / "reliability.md"
    page.write_text(
        f"# Reliability\n\nintro\n\n{report.HEADING}\n\nNot yet measured.\n\n"
        "## Soak: `make soak`\n\nsoak text\n"
    )
    report.write_section(page, f"{report.HEADING}\n\nfigures\n")
    assert page.read_text() == (
        f"# Reliability\n\nintro\n\n{report.HEADING}\n\nfigures\n\n## Soak: `make soak`\n\nsoak text\n"
    )
