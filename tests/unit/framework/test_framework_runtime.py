"""The plugin runtime and the scheduling algorithm over it (``scheduler.schedule_one``): extension point
order, first rejecting plugin, scoring, selection, binding."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import ClassVar

import numpy as np
import pytest
from tests.unit.framework.kubeobjects import (
    default_framework,
    default_profile,
    make_node,
    make_pod,
    pod_info,
    table_of,
)

from secondary_scheduler.framework import (
    Code,
    CycleState,
    Framework,
    Handle,
    NodeTable,
    PodInfo,
    ProfileSpec,
    Rejection,
    Status,
)
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from secondary_scheduler.framework.status import SKIP, SUCCESS
from secondary_scheduler.plugins.registry import PluginLoadError, in_tree_registry, merge
from secondary_scheduler.scheduler import schedule_one
from secondary_scheduler.scheduler.schedule_one import bind, num_feasible_nodes_to_find, schedule_pod

recorded: list[str] = []


class Recorder(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PermitPlugin):
    """Records every call; rejects nodes named in ``reject`` and scores a node by its number."""

    name: ClassVar[str] = "Recorder"

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        recorded.append("preFilter")
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        recorded.append("filter")
        rejected = pod.labels.get("reject", "").split(",")
        return [
            Rejection(
                np.array([table.names[slot] in rejected for slot in candidates]), "rejected by Recorder"
            )
        ]

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        recorded.append("preScore")
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        recorded.append("score")
        return np.array([int(table.names[slot].lstrip("n")) for slot in nodes], dtype=np.int64)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        recorded.append("normalize")
        return scores * 10

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        recorded.append("reserve")
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        recorded.append("unreserve")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        recorded.append("permit")
        return Status(Code.WAIT), 3600.0


class Flat(ScorePlugin):
    """Scores 50 everywhere."""

    name: ClassVar[str] = "Flat"

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return np.full(len(nodes), 50, dtype=np.int64)


class Bound(BindPlugin):
    """Binds in memory: records the binding."""

    name: ClassVar[str] = "Bound"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        recorded.append(f"bound {pod.key} {node_name}")
        return SUCCESS


class Binder(PreBindPlugin, BindPlugin, PostBindPlugin):
    name: ClassVar[str] = "Binder"

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        recorded.append("preBind")
        return SUCCESS

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        recorded.append("bind")
        return SKIP

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        recorded.append("postBind")


def framework(plugins: dict[str, list[tuple[str, int]]], **fields: object) -> Framework:
    registry = merge(in_tree_registry(), (Recorder, Flat, Binder), "test")
    return Framework(ProfileSpec("test", plugins, **fields), registry, Handle(), rng=random.Random(7))


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    recorded.clear()


def numbered_nodes(count: int) -> NodeTable:
    return table_of([make_node(f"n{index}") for index in range(count)])


async def test_extension_points_run_in_kube_scheduler_order() -> None:
    points = ("preFilter", "filter", "preScore", "score", "reserve", "permit")
    plugins = {point: [("Recorder", 1)] for point in points}
    plugins |= {
        "preBind": [("Binder", 0)],
        "bind": [("Binder", 0), ("Bound", 0)],
        "postBind": [("Binder", 0)],
    }
    registry = merge(in_tree_registry(), (Recorder, Binder, Bound), "test")
    fw = Framework(ProfileSpec("test", plugins), registry, Handle())
    pod = pod_info("p")
    state = CycleState()
    result = schedule_pod(fw, pod, numbered_nodes(3), state)
    assert result.node_name == "n2"
    assert fw.run_reserve_plugins_reserve(state, pod, "n2").is_success
    permit = fw.run_permit_plugins(state, pod, "n2")
    assert permit.status.code == Code.WAIT
    assert permit.timeouts == {"Recorder": 15 * 60.0}
    assert (await fw.run_pre_bind_plugins(state, pod, "n2")).is_success
    assert (await bind(fw, state, pod, "n2")).is_success
    fw.run_reserve_plugins_unreserve(state, pod, "n2")
    expected = ["preFilter", "filter", "preScore", "score", "normalize", "reserve", "permit"]
    assert recorded == [*expected, "preBind", "bind", "bound default/p n2", "postBind", "unreserve"]


def test_weights_multiply_normalized_scores() -> None:
    fw = framework({"score": [("Recorder", 2), ("Flat", 3)]})
    result = schedule_pod(fw, pod_info("p"), numbered_nodes(3), explain=True)
    assert result.explanation is not None
    assert result.explanation.totals.tolist() == [150, 170, 190]
    scores = result.explanation.as_dict()["n1"]
    assert scores["total"] == 170
    assert scores["plugins"] == {
        "Recorder": {"raw": 1, "normalized": 10, "weight": 2, "weighted": 20, "skipped": False},
        "Flat": {"raw": 50, "normalized": 50, "weight": 3, "weighted": 150, "skipped": False},
    }


def test_weight_zero_counts_as_one() -> None:
    assert framework({"score": [("Flat", 0)]}).score_weights == {"Flat": 1}


def test_ties_are_broken_at_random() -> None:
    fw = framework({"score": [("Flat", 1)]})
    table = numbered_nodes(4)
    chosen = {schedule_pod(fw, pod_info("p"), table).node_name for _ in range(60)}
    assert chosen == {"n0", "n1", "n2", "n3"}


def test_a_single_feasible_node_is_not_scored() -> None:
    fw = framework({"filter": [("Recorder", 0)], "score": [("Recorder", 1)]})
    result = schedule_pod(fw, pod_info("p", labels={"reject": "n0,n1"}), numbered_nodes(3))
    assert (result.node_name, result.feasible_nodes, result.evaluated_nodes) == ("n2", 1, 3)
    assert "score" not in recorded


def test_scores_out_of_range_are_an_error() -> None:
    fw = framework({"score": [("Recorder", 1)]})
    result = schedule_pod(fw, pod_info("p"), numbered_nodes(12))
    assert result.status.code == Code.ERROR
    assert '"Recorder" returns an invalid score 110' in result.message


def test_a_node_reports_only_the_first_plugin_that_rejected_it() -> None:
    fw = default_framework()
    nodes = [
        make_node("cordoned-and-small", cpu="1", unschedulable=True),
        make_node("small", cpu="1"),
        make_node("big", cpu="8"),
    ]
    result = schedule_pod(fw, pod_info("p", requests={"cpu": "2"}), table_of(nodes), explain=True)
    assert result.node_name == "big"
    assert result.diagnosis is not None
    statuses = result.diagnosis.node_statuses
    assert statuses["cordoned-and-small"].reasons == ("node(s) were unschedulable",)
    assert statuses["cordoned-and-small"].plugin == "NodeUnschedulable"
    assert statuses["small"].reasons == ("Insufficient cpu",)
    assert statuses["small"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.diagnosis.unschedulable_plugins == {"NodeUnschedulable", "NodeResourcesFit"}


def test_fit_error_message_matches_kube_scheduler() -> None:
    nodes = [make_node(f"gpu-{index}", cpu="2", labels={"pool": "gpu"}) for index in range(3)]
    nodes += [make_node(f"cpu-{index}", cpu="8", labels={"pool": "cpu"}) for index in range(9)]
    busy = [
        make_pod(f"busy-{index}", node_name=f"gpu-{index}", requests={"cpu": "1500m"}) for index in range(3)
    ]
    pod = pod_info("p", requests={"cpu": "1"}, nodeSelector={"pool": "gpu"})
    result = schedule_pod(default_framework(), pod, table_of(nodes, busy))
    assert result.node_name is None
    assert result.status.code == Code.UNSCHEDULABLE
    assert result.message == (
        "0/12 nodes are available: 3 Insufficient cpu, 9 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/12 nodes are available: "
        "3 No preemption victims found for incoming pod, 9 Preemption is not helpful for scheduling."
    )


def test_reason_counts_sort_as_text() -> None:
    nodes = [make_node(f"big-{index}", cpu="1", unschedulable=True) for index in range(12)]
    nodes += [make_node(f"small-{index}", cpu="1") for index in range(3)]
    result = schedule_pod(default_framework(), pod_info("p", requests={"cpu": "2"}), table_of(nodes))
    assert result.message.startswith(
        "0/15 nodes are available: 12 node(s) were unschedulable, 3 Insufficient cpu. "
        "no new claims to deallocate, preemption:"
    )


def test_without_post_filter_the_message_has_no_preemption_part() -> None:
    plugins = {"filter": [("NodeResourcesFit", 0)]}
    fw = Framework(ProfileSpec("test", plugins), in_tree_registry(), Handle())
    result = schedule_pod(fw, pod_info("p", requests={"cpu": "9"}), table_of([make_node("a")]))
    assert result.message == "0/1 nodes are available: 1 Insufficient cpu."


def test_preemption_policy_never_is_reported() -> None:
    result = schedule_pod(
        default_framework(),
        pod_info("p", requests={"cpu": "9"}, preemptionPolicy="Never"),
        table_of([make_node("a")]),
    )
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )


def test_no_nodes_at_all() -> None:
    result = schedule_pod(default_framework(), pod_info("p"), NodeTable())
    assert result.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.message == "no nodes available to schedule pods"


class Nominate(PostFilterPlugin):
    """Answers each PostFilter call with the next of ``answers``."""

    name: ClassVar[str] = "Nominate"
    answers: ClassVar[list[PostFilterResult]] = []

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: object
    ) -> PostFilterResult:
        return self.answers.pop(0)


def test_post_filter_nominations_are_kept_in_memory_and_reported_when_they_change() -> None:
    plugins = {"preFilter": [("Refuse", 0)], "postFilter": [("Nominate", 0)]}
    registry = merge(in_tree_registry(), (Refuse, Nominate), "test")
    fw = Framework(ProfileSpec("test", plugins), registry, Handle())
    pod = pod_info("p")
    nominator = fw.handle.nominator
    Nominate.answers[:] = [
        PostFilterResult(SUCCESS, "n1"),
        PostFilterResult(SUCCESS, "n1"),  # the same node again: nothing new to write
        PostFilterResult(Status.unschedulable("no luck")),  # None: left as it is
        PostFilterResult(Status.unschedulable("gone"), ""),  # taken back
    ]
    reported = [schedule_pod(fw, pod, numbered_nodes(2)).nominated_node for _ in range(2)]
    assert reported == ["n1", None] and nominator.node_of(pod.uid) == "n1"
    assert schedule_pod(fw, pod, numbered_nodes(2)).nominated_node is None
    assert nominator.node_of(pod.uid) == "n1"
    assert schedule_pod(fw, pod, numbered_nodes(2)).nominated_node == ""
    assert nominator.node_of(pod.uid) is None
    assert fw.handle.shared.pod_handlers == [nominator]  # a PostFilter profile follows the pods' nominations


class Refuse(PreFilterPlugin):
    name: ClassVar[str] = "Refuse"

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        return Status.unschedulable("pod is not ready", unresolvable=True)


def test_a_pre_filter_rejection_replaces_the_node_counts() -> None:
    plugins = {
        "preFilter": [("Refuse", 0)],
        "filter": [("NodeResourcesFit", 0)],
        "postFilter": [("DefaultPreemption", 0)],
    }
    fw = Framework(ProfileSpec("test", plugins), merge(in_tree_registry(), (Refuse,), "test"), Handle())
    result = schedule_pod(fw, pod_info("p"), numbered_nodes(2))
    assert result.message == (
        "0/2 nodes are available: pod is not ready. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert result.diagnosis is not None
    assert result.diagnosis.unschedulable_plugins == {"Refuse"}


def test_skip_at_pre_filter_and_pre_score_skips_filter_and_score() -> None:
    fw = default_framework()
    result = schedule_pod(fw, pod_info("p"), numbered_nodes(2), explain=True)
    assert result.explanation is not None
    skipped = {scores.plugin for scores in result.explanation.plugins if scores.skipped}
    assert skipped == {
        "NodeAffinity",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    }


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (None, 50, 50),
        (None, 100, 100),
        (None, 1000, 420),
        (None, 5000, 500),
        (None, 6000, 300),
        (0, 10000, 500),
        (10, 6000, 600),
        (20, 300, 100),
        (100, 200, 200),
    ],
)
def test_number_of_feasible_nodes_to_find(percentage: int | None, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_percentage_of_nodes_to_score_stops_early_and_rotates_the_start() -> None:
    fw = framework({"filter": [("Recorder", 0)], "score": [("Flat", 1)]}, percentage_of_nodes_to_score=50)
    table = numbered_nodes(300)
    rejected = ",".join(f"n{index}" for index in range(0, 300, 2))  # every even node fails
    pod = pod_info("p", labels={"reject": rejected})
    first = schedule_pod(fw, pod, table, explain=True)
    assert (first.feasible_nodes, first.evaluated_nodes) == (150, 300)
    fw = framework({"filter": [("Recorder", 0)], "score": [("Flat", 1)]}, percentage_of_nodes_to_score=20)
    first = schedule_pod(fw, pod, table, explain=True)
    assert first.explanation is not None
    assert (first.feasible_nodes, first.evaluated_nodes) == (100, 200)
    assert first.explanation.nodes[0] == "n1"
    assert first.explanation.nodes[-1] == "n199"
    second = schedule_pod(fw, pod, table, explain=True)
    assert second.explanation is not None
    assert second.explanation.nodes[0] == "n201"
    assert second.explanation.nodes[-1] == "n99"


def test_unknown_plugins_and_wrong_extension_points_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown plugin 'Nope'"):
        Framework(ProfileSpec("test", {"filter": [("Nope", 0)]}), in_tree_registry(), Handle())
    with pytest.raises(ValueError, match="'ImageLocality' does not implement filter"):
        Framework(ProfileSpec("test", {"filter": [("ImageLocality", 0)]}), in_tree_registry(), Handle())


def test_a_plugin_at_several_points_is_built_once() -> None:
    fw = default_framework()
    assert fw.filter_plugins[3] is fw.score_plugins[1]  # NodeAffinity


def test_registering_a_name_twice_fails() -> None:
    class Impostor(Flat):
        name: ClassVar[str] = "NodeName"

    with pytest.raises(PluginLoadError, match="plugin name 'NodeName' is taken by"):
        merge(in_tree_registry(), (Impostor,), "test")


async def test_default_binder_without_a_client_fails_the_binding() -> None:
    fw = default_framework()
    state = CycleState()
    pod = pod_info("p")
    assert schedule_pod(fw, pod, numbered_nodes(2), state).node_name is not None  # PreFilter ran
    status = await bind(fw, state, pod, "n0")
    assert (status.code, status.message, status.plugin) == (
        Code.ERROR,
        'running Bind plugin "DefaultBinder": DefaultBinder needs an API client in the framework handle',
        "DefaultBinder",
    )


def test_pre_enqueue_and_queue_sort() -> None:
    fw = default_framework()
    gated = fw.run_pre_enqueue(pod_info("p", schedulingGates=[{"name": "a"}, {"name": "b"}]))
    assert (gated.code, gated.message, gated.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "waiting for scheduling gates: [a b]",
        "SchedulingGates",
    )
    assert fw.run_pre_enqueue(pod_info("p")).is_success


class Deny(ReservePlugin, PermitPlugin):
    name: ClassVar[str] = "Deny"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.unschedulable("volume is taken")

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        recorded.append("unreserve Deny")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return Status.unschedulable("not now"), 0.0


def test_reserve_and_permit_rejections_name_their_plugin() -> None:
    plugins = {"reserve": [("Recorder", 0), ("Deny", 0)], "permit": [("Deny", 0), ("Recorder", 0)]}
    fw = Framework(
        ProfileSpec("test", plugins), merge(in_tree_registry(), (Recorder, Deny), "test"), Handle()
    )
    pod = pod_info("p")
    status = fw.run_reserve_plugins_reserve(CycleState(), pod, "a")
    assert (status.code, status.message, status.plugin) == (Code.UNSCHEDULABLE, "volume is taken", "Deny")
    fw.run_reserve_plugins_unreserve(CycleState(), pod, "a")
    assert recorded == ["reserve", "unreserve Deny", "unreserve"]
    permit = fw.run_permit_plugins(CycleState(), pod, "a")
    assert (permit.status.message, permit.status.plugin, dict(permit.timeouts)) == ("not now", "Deny", {})


async def test_without_a_bind_plugin_binding_fails() -> None:
    fw = Framework(ProfileSpec("test", {}), in_tree_registry(), Handle())
    status = await bind(fw, CycleState(), pod_info("p"), "a")
    assert status.code == Code.ERROR


def test_the_profile_percentage_overrides_the_global_one() -> None:
    profile = ProfileSpec("test", {}, percentage_of_nodes_to_score=None)
    assert (
        Framework(profile, {}, Handle(), percentage_of_nodes_to_score=30).percentage_of_nodes_to_score == 30
    )
    own = ProfileSpec("test", {}, percentage_of_nodes_to_score=0)
    assert Framework(own, {}, Handle(), percentage_of_nodes_to_score=30).percentage_of_nodes_to_score == 0


def test_pre_filter_reads_combines_what_each_plugin_says_it_reads() -> None:
    """A plugin that does not say (the default) may read any pod; in-tree ones say exactly which."""
    plain = pod_info("plain", labels={"app": "web"})
    spread = pod_info(
        "spread",
        labels={"app": "web"},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    )
    fw = default_framework()
    reads = fw.pre_filter_reads(spread)
    assert reads(pod_info("other-web", labels={"app": "web"}))
    assert not reads(pod_info("other-db", labels={"app": "db"}))
    assert not fw.pre_filter_reads(plain)(pod_info("other-web", labels={"app": "web"}))
    unknown = Framework(
        ProfileSpec("test", {"preFilter": [("Refuse", 0)]}),
        merge(in_tree_registry(), (Refuse,), "test"),
        Handle(),
    )
    assert unknown.pre_filter_reads(plain)(pod_info("anyone"))


@pytest.mark.parametrize("seed", range(10))
def test_filtering_in_batches_decides_as_one_pass(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The filters see a first batch of candidates a little over the number wanted, the rest only
    if too few fit: node, counts, the nodes scored, the next start and the FitError are those of
    one pass over every node, whatever share of nodes fits and however many pods are nominated."""
    rng = random.Random(seed)
    count = rng.choice([120, 400, 1000, 1300])
    fits = rng.choice([1.0, 0.9, 0.5, 0.1, 0.0])
    nodes = [make_node(f"n{i}", cpu="2" if rng.random() < fits else "500m") for i in range(count)]
    percentage = rng.choice([None, 10, 30])
    crowded = rng.sample(range(count), k=count * rng.choice([1, 3]) // 10)  # no room left by a nominated pod

    def run(first_batch: Callable[[int, int], int]) -> list[tuple[object, ...]]:
        monkeypatch.setattr(schedule_one, "first_filter_batch", first_batch)
        profile = default_profile(percentage_of_nodes_to_score=percentage)
        fw = Framework(profile, in_tree_registry(), Handle(), rng=random.Random(seed))
        for index in crowded:
            nominated = pod_info(f"nominated-{index}", priority=10, requests={"cpu": "2"})
            fw.handle.nominator.add(nominated, f"n{index}")
        table = table_of(nodes)
        outcomes = []
        for number in range(4):
            result = schedule_pod(fw, pod_info(f"p{number}", requests={"cpu": "1"}), table, explain=True)
            scored = result.explanation.nodes if result.explanation is not None else ()
            outcomes.append(
                (result.node_name, result.feasible_nodes, result.evaluated_nodes, scored, result.message)
            )
        return outcomes

    assert run(schedule_one.first_filter_batch) == run(lambda wanted, count: count)
