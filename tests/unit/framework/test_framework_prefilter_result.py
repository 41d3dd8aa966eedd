"""PreFilterResult: PreFilter plugins naming the only nodes to filter, intersected as upstream's
RunPreFilterPlugins does, and the words findNodesThatFitPod reports the other nodes with."""

from __future__ import annotations

from typing import Any, ClassVar

from tests.unit.framework.kubeobjects import default_framework, make_node, make_pod, pod_info, table_of

from secondary_scheduler.framework import Code, CycleState, Framework, Handle, NodeTable, PodInfo, ProfileSpec
from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult, Rejection
from secondary_scheduler.framework.status import Status
from secondary_scheduler.plugins.registry import in_tree_registry, merge
from secondary_scheduler.scheduler.schedule_one import schedule_pod

NODES = [make_node(name, cpu="2") for name in ("a", "b", "c", "d")]
filtered: list[str] = []


class Naming(PreFilterPlugin, FilterPlugin):
    """Allows the nodes listed in the pod's ``allow-<name>`` annotation ("-" for none)."""

    name: ClassVar[str] = "Naming"
    reads_node_pods: ClassVar[bool] = False

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status | PreFilterResult:
        listed = (pod.obj["metadata"].get("annotations") or {}).get(f"allow-{self.name}")
        if listed is None:
            return Status()
        return PreFilterResult(frozenset(name for name in listed.split(",") if name != "-"))

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        filtered.extend(table.names[slot] for slot in candidates.tolist())
        return []


class Other(Naming):
    name: ClassVar[str] = "Other"


def framework() -> Framework:
    plugins = {"preFilter": [("Naming", 0), ("Other", 0)], "filter": [("Naming", 0)]}
    return Framework(
        ProfileSpec("test", plugins), merge(in_tree_registry(), (Naming, Other), "test"), Handle()
    )


def allowing(**lists: str) -> PodInfo:
    pod = make_pod("p")
    pod["metadata"]["annotations"] = {f"allow-{plugin}": names for plugin, names in lists.items()}
    return PodInfo.from_pod(pod)


def test_only_the_named_nodes_are_filtered_and_the_others_are_unresolvable() -> None:
    filtered.clear()
    state = CycleState()
    result = schedule_pod(framework(), allowing(Naming="b,c,ghost", Other="c,d,b"), table_of(NODES), state)
    assert sorted(filtered) == ["b", "c"]
    assert result.node_name in ("b", "c")
    assert state.pre_filter_nodes == {"b", "c"}
    assert state.pre_filter_narrowed_by == {"Naming", "Other"}


def test_every_node_without_a_result() -> None:
    filtered.clear()
    schedule_pod(framework(), allowing(), table_of(NODES))
    assert sorted(filtered) == ["a", "b", "c", "d"]


def test_an_empty_intersection_is_unresolvable_in_upstreams_words() -> None:
    one = schedule_pod(framework(), allowing(Naming="-"), table_of(NODES))
    assert one.message == "0/4 nodes are available: node(s) didn't satisfy plugin Naming."
    both = schedule_pod(framework(), allowing(Naming="a", Other="b"), table_of(NODES))
    assert both.message == (
        "0/4 nodes are available: node(s) didn't satisfy plugin(s) [Naming Other] simultaneously."
    )
    assert both.diagnosis is not None
    assert both.diagnosis.unschedulable_plugins == {"Naming", "Other"}
    assert both.diagnosis.status_of_others().code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_names_no_node_has_leave_no_node_to_filter() -> None:
    filtered.clear()
    result = schedule_pod(framework(), allowing(Naming="ghost"), table_of(NODES))
    assert filtered == []
    assert result.message == "0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [Naming]."


def name_in(*names: str) -> dict[str, Any]:
    return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(names)}]}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def test_node_affinity_pins_a_daemonset_pod_and_reports_the_others() -> None:
    nodes = [*NODES[:3], make_node("tiny", cpu="100m")]
    pod = pod_info("p", affinity=required(name_in("tiny")), requests={"cpu": "1"})
    result = schedule_pod(default_framework(), pod, table_of(nodes))
    assert result.message.startswith(
        "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
    )
    assert result.diagnosis is not None
    assert result.diagnosis.unschedulable_plugins == {"NodeAffinity", "NodeResourcesFit"}


def test_node_affinity_conflicting_names_are_rejected_at_prefilter() -> None:
    conflicting = required({"matchFields": [*name_in("a")["matchFields"], *name_in("b")["matchFields"]]})
    result = schedule_pod(default_framework(), pod_info("p", affinity=conflicting), table_of(NODES))
    assert result.message.startswith("0/4 nodes are available: pod affinity terms conflict.")
