"""DefaultPreemption in memory: which victims, which node, the nominations that keep the room.

Each case is a whole scheduling cycle of kube-scheduler's default profile over a NodeTable
(``schedule_one.schedule_pod``): the filters find no node, PostFilter preempts. Victims, the
nominated node and the messages are what kube-scheduler 1.34 gives on the same objects
(pkg/scheduler/framework/preemption, plugins/defaultpreemption).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pydantic
import pytest
from tests.unit.framework.kubeobjects import container, default_framework, make_node, make_pod, table_of

from secondary_scheduler.framework import (
    CycleState,
    Framework,
    Handle,
    NodeTable,
    PodInfo,
    ScheduleResult,
    preemption,
)
from secondary_scheduler.framework.diagnosis import Diagnosis, RejectedNodes
from secondary_scheduler.framework.informers import POD_DISRUPTION_BUDGETS
from secondary_scheduler.framework.nominator import Nominator
from secondary_scheduler.framework.preemption import (
    Budget,
    Candidate,
    Victims,
    importance,
    pick_one_node,
    start_time,
    unschedulable_slots,
)
from secondary_scheduler.framework.status import Code, Status
from secondary_scheduler.kube.client import ApiError
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.defaultpreemption.args import DefaultPreemptionArgs
from secondary_scheduler.plugins.defaultpreemption.plugin import (
    PRE_FILTER_PASSED,
    DefaultPreemption,
    PreemptionNote,
)
from secondary_scheduler.scheduler.schedule_one import schedule_pod

JSON = dict[str, Any]
OLD = "2020-01-01T00:00:00Z"


def running(
    name: str,
    node: str,
    *,
    cpu: str = "1",
    priority: int = 0,
    started: str | None = OLD,
    labels: dict[str, str] | None = None,
) -> JSON:
    """A pod bound to ``node`` and running since ``started`` (None: not started yet)."""
    pod = make_pod(name, node_name=node, requests={"cpu": cpu}, priority=priority, labels=labels)
    pod["status"] = {"phase": "Running", **({"startTime": started} if started else {})}
    return pod


def pending(name: str, *, cpu: str = "1", priority: int = 100, **spec: Any) -> PodInfo:
    return PodInfo.from_pod(make_pod(name, requests={"cpu": cpu}, priority=priority, **spec))


def pdb(name: str, app: str, allowed: int, disrupted: Sequence[str] = ()) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": dict.fromkeys(disrupted, OLD)},
    }


class Cluster:
    """A default-profile framework over a table, with PDBs, that schedules pods one cycle each."""

    def __init__(
        self,
        nodes: Sequence[JSON],
        pods: Sequence[JSON] = (),
        budgets: Sequence[JSON] = (),
        args: JSON | None = None,
        handle: Handle | None = None,
    ) -> None:
        self.handle = handle or Handle()
        plugin_args = {"DefaultPreemption": args} if args is not None else {}
        self.framework: Framework = default_framework(self.handle, plugin_args=plugin_args)
        self.handle.informer(POD_DISRUPTION_BUDGETS).replace(budgets)
        self.table: NodeTable = table_of(nodes, pods)
        self.state = CycleState()

    @property
    def plugin(self) -> DefaultPreemption:
        [plugin] = [
            plugin for plugin in self.framework.post_filter_plugins if isinstance(plugin, DefaultPreemption)
        ]
        return plugin

    @property
    def nominator(self) -> Nominator:
        return self.handle.nominator

    def schedule(self, pod: PodInfo) -> ScheduleResult:
        self.state = CycleState()
        return schedule_pod(self.framework, pod, self.table, self.state)

    def note(self) -> PreemptionNote:
        note = self.state.notes["DefaultPreemption"]
        assert isinstance(note, PreemptionNote)
        return note

    def victims(self) -> list[str]:
        candidate = self.note().candidate
        assert candidate is not None, self.note().message
        return [victim.name for victim in candidate.victims]

    def evict(self, *names: str) -> None:
        """What the API server and the watch do after preemption: the victims are gone."""
        for name in names:
            assert self.table.remove_pod(f"default/{name}") is not None


def test_victims_are_the_lowest_priority_pods_that_make_room() -> None:
    cluster = Cluster(
        [make_node("a", cpu="5")],
        [
            running("p1", "a", priority=1),
            running("p5", "a", priority=5),
            running("p10", "a", priority=10),
            running("p200", "a", cpu="2", priority=200),
        ],
    )
    result = cluster.schedule(pending("preemptor", cpu="2", priority=100))
    assert result.node_name is None
    assert result.nominated_node == "a"
    assert result.status.code == Code.UNSCHEDULABLE
    # A successful preemption adds nothing to kube-scheduler's FitError text.
    assert result.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert cluster.victims() == ["p5", "p1"]  # most important first; p10 is reprieved, p200 outranks
    assert cluster.nominator.node_of("uid-preemptor") == "a"


def test_equal_priorities_reprieve_the_longest_running_first() -> None:
    cluster = Cluster(
        [make_node("a", cpu="4")],
        [
            running("newest", "a", started="2024-01-01T00:00:00Z"),
            running("not-started", "a", started=None),
            running("oldest", "a", started="2020-01-01T00:00:00Z"),
            running("middle", "a", started="2022-01-01T00:00:00Z"),
        ],
    )
    cluster.schedule(pending("preemptor", cpu="2", priority=10))
    assert cluster.victims() == ["newest", "not-started"]


def test_a_pod_covered_by_an_exhausted_budget_is_reprieved_first_on_its_node() -> None:
    pods = [running("x", "a", priority=5, labels={"app": "x"}), running("y", "a", priority=10)]
    protected = Cluster([make_node("a", cpu="2")], pods, budgets=[pdb("x", "x", allowed=0)])
    protected.schedule(pending("preemptor"))
    assert protected.victims() == ["y"]  # the more important pod goes: evicting x breaks its budget
    candidate = protected.note().candidate
    assert candidate is not None and (candidate.node, candidate.pdb_violations) == ("a", 0)

    unprotected = Cluster([make_node("a", cpu="2")], pods)
    unprotected.schedule(pending("preemptor"))
    assert unprotected.victims() == ["x"]


def test_a_node_without_pdb_violations_is_preferred() -> None:
    nodes = [make_node("a", cpu="1"), make_node("b", cpu="1")]
    pods = [running("protected", "a", labels={"app": "x"}), running("free", "b", priority=50)]
    cluster = Cluster(nodes, pods, budgets=[pdb("x", "x", allowed=0)])
    result = cluster.schedule(pending("preemptor"))
    # b's victim has the higher priority, but a's would break its budget.
    assert result.nominated_node == "b"
    assert cluster.victims() == ["free"]


def test_violations_are_counted_when_no_other_choice_exists() -> None:
    pods = [
        running("x1", "a", labels={"app": "x"}, started="2020-01-01T00:00:00Z"),
        running("x2", "a", labels={"app": "x"}, started="2021-01-01T00:00:00Z"),
        running("x3", "a", labels={"app": "x"}, started="2022-01-01T00:00:00Z"),
    ]
    # One disruption allowed, x3 already counted as disrupted: x1 and x2 must both go.
    budgets = [pdb("x", "x", allowed=1, disrupted=["x3"])]
    cluster = Cluster([make_node("a", cpu="3")], pods, budgets=budgets)
    result = cluster.schedule(pending("preemptor", cpu="3"))
    assert result.nominated_node == "a"
    candidate = cluster.note().candidate
    assert candidate is not None
    assert [victim.name for victim in candidate.victims] == ["x1", "x2", "x3"]
    assert candidate.pdb_violations == 1
    assert cluster.note().lines() == [
        "nominated to a; victims: default/x1 (priority 0), default/x2 (priority 0), default/x3 (priority 0)",
        "PodDisruptionBudgets violated: 1",
    ]


def test_a_pdb_selects_only_its_namespace_and_an_empty_selector_selects_nothing() -> None:
    pods = [running("x", "a", labels={"app": "x"})]
    other_namespace = pdb("x", "x", allowed=0)
    other_namespace["metadata"]["namespace"] = "elsewhere"
    empty = pdb("all", "x", allowed=0)
    empty["spec"]["selector"] = {}
    cluster = Cluster([make_node("a", cpu="1")], pods, budgets=[other_namespace, empty])
    cluster.schedule(pending("preemptor"))
    candidate = cluster.note().candidate
    assert candidate is not None and candidate.pdb_violations == 0


def test_lowest_highest_victim_priority_beats_fewer_victims() -> None:
    nodes = [make_node("a", cpu="2"), make_node("b", cpu="2")]
    pods = [
        running("a-big", "a", cpu="2", priority=10),
        running("b-1", "b", priority=5),
        running("b-2", "b", priority=5),
    ]
    cluster = Cluster(nodes, pods)
    assert cluster.schedule(pending("preemptor", cpu="2")).nominated_node == "b"
    assert cluster.victims() == ["b-1", "b-2"]


def test_smallest_priority_sum_breaks_a_tie_on_the_highest() -> None:
    nodes = [make_node("a", cpu="2"), make_node("b", cpu="2")]
    pods = [
        running("a-5", "a", priority=5),
        running("a-3", "a", priority=3),
        running("b-5", "b", priority=5),
        running("b-1", "b", priority=1),
    ]
    cluster = Cluster(nodes, pods)
    assert cluster.schedule(pending("preemptor", cpu="2")).nominated_node == "b"


def test_latest_start_of_the_highest_priority_victims_breaks_the_last_tie() -> None:
    nodes = [make_node("a", cpu="1"), make_node("b", cpu="1"), make_node("c", cpu="1")]
    pods = [
        running("on-a", "a", started="2021-01-01T00:00:00Z"),
        running("on-b", "b", started="2023-01-01T00:00:00Z"),
        running("on-c", "c", started="2022-01-01T00:00:00Z"),
    ]
    cluster = Cluster(nodes, pods)
    assert cluster.schedule(pending("preemptor")).nominated_node == "b"


def priority_pod(name: str, priority: int, started: str = OLD) -> PodInfo:
    pod = make_pod(name, priority=priority)
    pod["status"] = {"startTime": started}
    return PodInfo.from_pod(pod)


def test_fewest_victims_and_then_the_first_candidate() -> None:
    # Priorities are offset by 2^31 before summing, so equal sums with different counts
    # need negative priorities; kube-scheduler then prefers fewer victims.
    two = Candidate("two", (priority_pod("t1", 0), priority_pod("t2", 0)), 0)
    three = Candidate(
        "three", (priority_pod("h1", 0), priority_pod("h2", -(2**30)), priority_pod("h3", -(2**30))), 0
    )
    assert pick_one_node([three, two], now=0.0) is two
    same = Candidate("same", two.victims, 0)
    assert pick_one_node([two, same], now=0.0) is two
    assert pick_one_node([same, two], now=0.0) is same


def test_preemption_policy_never_preempts_nothing() -> None:
    cluster = Cluster([make_node("a", cpu="1")], [running("victim", "a")])
    result = cluster.schedule(pending("polite", preemptionPolicy="Never"))
    assert result.nominated_node is None  # the nomination is left as it is
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    assert len(cluster.nominator) == 0
    assert cluster.table.node_of_pod("default/victim") == "a"


class FixedOffset(random.Random):
    def __init__(self, offset: int) -> None:
        super().__init__(0)
        self.offset = offset

    def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        return self.offset


def four_nodes_with_one_victim_each() -> tuple[list[JSON], list[JSON]]:
    """Nodes a..d, each full with one pod; d's has the lowest priority (the best choice)."""
    nodes = [make_node(name, cpu="1") for name in "abcd"]
    pods = [
        running(f"on-{name}", name, priority=priority)
        for name, priority in zip("abcd", (40, 30, 20, 10), strict=True)
    ]
    return nodes, pods


def test_the_dry_run_stops_at_min_candidate_nodes() -> None:
    nodes, pods = four_nodes_with_one_victim_each()
    everything = Cluster(nodes, pods)
    assert everything.schedule(pending("preemptor")).nominated_node == "d"

    one = Cluster(nodes, pods, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1})
    one.plugin.rng = FixedOffset(0)
    assert one.schedule(pending("preemptor")).nominated_node == "a"

    two = Cluster(nodes, pods, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2})
    two.plugin.rng = FixedOffset(1)
    assert two.schedule(pending("preemptor")).nominated_node == "c"  # b and c were tried


def test_candidates_that_violate_a_budget_do_not_end_the_dry_run() -> None:
    nodes, pods = four_nodes_with_one_victim_each()
    pods[0]["metadata"]["labels"] = {"app": "x"}
    cluster = Cluster(
        nodes,
        pods,
        budgets=[pdb("x", "x", allowed=0)],
        args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1},
    )
    cluster.plugin.rng = FixedOffset(0)
    assert cluster.schedule(pending("preemptor")).nominated_node == "b"


def test_num_candidates_follows_kube_scheduler() -> None:
    args = DefaultPreemptionArgs.model_validate({})
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (10, 100)
    assert [args.num_candidates(n) for n in (5, 100, 1000, 5000)] == [5, 100, 100, 500]
    with pytest.raises(pydantic.ValidationError, match="cannot both be zero"):
        DefaultPreemptionArgs.model_validate(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
        )
    with pytest.raises(pydantic.ValidationError):
        DefaultPreemptionArgs.model_validate({"minCandidateNodesPercentage": 101})
    assert IN_TREE_CATALOG["DefaultPreemption"].args_model is DefaultPreemptionArgs


def test_the_nominated_room_is_kept_for_pods_of_equal_or_higher_priority() -> None:
    nodes = [make_node("a", cpu="2"), make_node("b", cpu="2")]
    pods = [running("victim", "a", cpu="2"), running("vip", "b", cpu="2", priority=1000)]
    cluster = Cluster(nodes, pods)
    preemptor = pending("preemptor", cpu="2", priority=100)
    assert cluster.schedule(preemptor).nominated_node == "a"
    cluster.evict("victim")

    for name, priority in (("lower", 50), ("equal", 100)):
        result = cluster.schedule(pending(name, cpu="2", priority=priority))
        assert result.node_name is None, name
        assert result.message == (
            "0/2 nodes are available: 2 Insufficient cpu. "
            "no new claims to deallocate, preemption: "
            "0/2 nodes are available: 2 No preemption victims found for incoming pod."
        )
    # A more important pod does not wait for a less important one's nomination.
    assert cluster.schedule(pending("higher", cpu="2", priority=200)).node_name == "a"

    # The preemptor's next cycle tries its nominated node first, and takes it.
    result = cluster.schedule(preemptor)
    assert (result.node_name, result.evaluated_nodes) == ("a", 1)


def test_a_nominated_pod_counts_only_where_it_would_hold_room() -> None:
    # Filters pass with the nominated pod and without it: pod affinity to a pod that is only
    # nominated (not running) does not let a pod in, as in RunFilterPluginsWithNominatedPods.
    nodes = [make_node(name, cpu="4", labels={"kubernetes.io/hostname": name}) for name in "ab"]
    cluster = Cluster(nodes)
    cluster.nominator.add(pending("friend", labels={"app": "friend"}, priority=100), "a")
    term = {"labelSelector": {"matchLabels": {"app": "friend"}}, "topologyKey": "kubernetes.io/hostname"}
    follower = pending(
        "follower",
        priority=100,
        affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    result = cluster.schedule(follower)
    assert result.node_name is None
    assert result.diagnosis is not None
    assert result.diagnosis.node_statuses["a"].reasons == ("node(s) didn't match pod affinity rules",)


def test_a_nominated_pod_already_in_the_table_is_not_counted_twice() -> None:
    cluster = Cluster([make_node("a", cpu="2")])
    nominated = pending("nominated", cpu="1", priority=100)
    cluster.nominator.add(nominated, "a")
    cluster.table.add_pod(nominated, "a")  # assumed: its binding is in flight
    assert cluster.schedule(pending("next", cpu="1", priority=100)).node_name == "a"


def test_no_candidates_keep_kube_schedulers_messages() -> None:
    nodes = [make_node("a", cpu="4"), make_node("b", cpu="4"), make_node("cordoned", unschedulable=True)]
    pods = [
        running("low", "a", cpu="1"),
        running("high", "a", cpu="3", priority=1000),
        running("b-high", "b", cpu="4", priority=1000),
    ]
    cluster = Cluster(nodes, pods)
    result = cluster.schedule(pending("preemptor", cpu="2"))
    assert result.nominated_node is None  # no nomination to take back
    assert result.message == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )


def test_the_dry_run_leaves_the_table_as_it_was() -> None:
    nodes, pods = four_nodes_with_one_victim_each()
    cluster = Cluster(nodes, pods)
    before = (cluster.table.requested.copy(), cluster.table.pod_count.copy())
    keys = [sorted(cluster.table.pods[slot]) for slot in cluster.table.active_slots()]
    cluster.schedule(pending("preemptor"))
    assert np.array_equal(cluster.table.requested, before[0])
    assert np.array_equal(cluster.table.pod_count, before[1])
    assert [sorted(cluster.table.pods[slot]) for slot in cluster.table.active_slots()] == keys


# -- the API work, in the background ------------------------------------------------------------


class FakeClient:
    """Records what preemption asks of the API server."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    async def patch(self, path: str, body: Any, *, patch_type: str = "merge", params: Any = None) -> JSON:
        self.calls.append(("patch", path, body))
        return {}

    async def delete(self, path: str, params: Any = None) -> JSON:
        self.calls.append(("delete", path, None))
        return {}


async def settle(handle: Handle) -> None:
    while handle.shared.tasks:
        await asyncio.gather(*handle.shared.tasks)


async def test_victims_get_the_disruption_condition_then_are_deleted_with_an_event() -> None:
    client = FakeClient()
    events: list[tuple[Any, ...]] = []
    handle = Handle(client=client, event_sink=lambda *event: events.append(event))  # type: ignore[arg-type]
    pods = [running("v1", "a", priority=1), running("v2", "a", priority=2), running("held", "a", priority=3)]
    cluster = Cluster([make_node("a", cpu="3")], pods, handle=handle)
    lower = pending("lower", priority=10)
    cluster.nominator.add(lower, "a")
    [held_pod] = [pod for pod, _slot in cluster.table.all_pods() if pod.name == "held"]
    held = handle.waiting_pods.add(held_pod, "a", {"X": 60})

    preemptor = pending("preemptor", cpu="3", priority=100)
    assert cluster.schedule(preemptor).nominated_node == "a"
    assert cluster.nominator.node_of("uid-lower") is None
    # Until its victims' evictions are answered, PreEnqueue keeps the preemptor out of the queue.
    waiting = cluster.framework.run_pre_enqueue(preemptor)
    assert (waiting.code, waiting.message, waiting.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "waiting for the preemption for this pod to be finished",
        "DefaultPreemption",
    )
    await settle(handle)
    assert cluster.framework.run_pre_enqueue(preemptor).is_success

    status_path = "/api/v1/namespaces/default/pods/{}/status"
    assert cluster.nominator.node_of("uid-preemptor") == "a"  # its status is the scheduler's to write
    assert ("patch", status_path.format("lower"), {"status": {"nominatedNodeName": None}}) in client.calls
    for victim in ("v1", "v2"):
        [condition_patch] = [call for call in client.calls if call[1] == status_path.format(victim)]
        [condition] = condition_patch[2]["status"]["conditions"]
        assert condition["type"] == "DisruptionTarget" and condition["status"] == "True"
        assert condition["reason"] == "PreemptionByScheduler"
        assert condition["message"] == "default-scheduler: preempting to accommodate a higher priority pod"
        delete = ("delete", f"/api/v1/namespaces/default/pods/{victim}", None)
        assert client.calls.index(condition_patch) < client.calls.index(delete)
    assert not [call for call in client.calls if "held" in call[1]]  # held by Permit: rejected, not deleted
    rejection = await held.wait()
    assert (rejection.code, rejection.message, rejection.plugin) == (
        Code.UNSCHEDULABLE,
        "preempted",
        "DefaultPreemption",
    )
    preempted = sorted((event[0].name, event[2:]) for event in events)
    assert preempted == [
        (name, ("Normal", "Preempted", "Preempting", "Preempted by pod uid-preemptor on node a"))
        for name in ("held", "v1", "v2")
    ]

    # Once the victims are gone, the pod takes its node; preempting again is possible.
    cluster.evict("v1", "v2", "held")
    assert cluster.schedule(preemptor).node_name == "a"


@pytest.mark.parametrize("watch_first", [False, True])
async def test_the_preemptor_goes_back_at_once_only_if_the_watch_took_its_victim_first(
    watch_first: bool,
) -> None:
    """Out of the queue until the eviction is answered; then back at once if the victim is gone
    from the table already (its deletion event came while the pod was kept out), else its
    deletion event requeues it (the pod is no longer kept out by then)."""
    activated: list[list[str]] = []
    cluster: Cluster

    class WatchFirst(FakeClient):
        async def delete(self, path: str, params: Any = None) -> JSON:
            if watch_first:
                cluster.evict(path.rsplit("/", 1)[1])
            return await super().delete(path, params)

    handle = Handle(client=WatchFirst(), activator=lambda pods: activated.append([pod.name for pod in pods]))  # type: ignore[arg-type]
    cluster = Cluster([make_node("a", cpu="1")], [running("victim", "a")], handle=handle)
    preemptor = pending("preemptor")
    assert cluster.schedule(preemptor).nominated_node == "a"
    assert not cluster.framework.run_pre_enqueue(preemptor).is_success
    await settle(handle)
    assert cluster.framework.run_pre_enqueue(preemptor).is_success
    assert activated == ([["preemptor"]] if watch_first else [])


async def test_the_preemptor_is_let_in_once_its_victims_are_gone_before_the_answers() -> None:
    """kube-scheduler stops keeping the pod out just before its last eviction call, so that
    call's deletion event lets it in. Here the table showing every victim gone does, answered
    or not; the late answer then neither activates the pod again nor ends a preemption the pod
    started since."""
    answers = {name: asyncio.Event() for name in ("victim", "other")}
    activated: list[list[str]] = []

    class Slow(FakeClient):
        async def delete(self, path: str, params: Any = None) -> JSON:
            await answers[path.rsplit("/", 1)[1]].wait()
            return await super().delete(path, params)

    handle = Handle(client=Slow(), activator=lambda pods: activated.append([pod.name for pod in pods]))  # type: ignore[arg-type]
    nodes = [make_node("a", cpu="1"), make_node("b", cpu="1")]
    cluster = Cluster(
        nodes, [running("victim", "a", priority=1), running("other", "b", priority=5)], handle=handle
    )
    preemptor = pending("preemptor")
    assert cluster.schedule(preemptor).nominated_node == "a"
    for _ in range(5):  # its eviction sent, not answered
        await asyncio.sleep(0)
    assert not cluster.framework.run_pre_enqueue(preemptor).is_success

    cluster.evict("victim")  # the deletion event, before the answer
    assert cluster.framework.run_pre_enqueue(preemptor).is_success

    # Someone else took node a meanwhile: the pod preempts again, on b.
    cluster.table.add_pod(PodInfo.from_pod(running("vip", "a", priority=1000)), "a")
    assert cluster.schedule(preemptor).nominated_node == "b"
    answers["victim"].set()
    for _ in range(5):  # the first eviction answered: the second preemption goes on
        await asyncio.sleep(0)
    assert not cluster.framework.run_pre_enqueue(preemptor).is_success
    answers["other"].set()
    await settle(handle)
    assert cluster.framework.run_pre_enqueue(preemptor).is_success
    assert activated == []  # each time an event (here, the test) let it in, or will


async def test_a_failed_eviction_lets_the_preemptor_back_at_once() -> None:
    activated: list[str] = []

    class Refusing(FakeClient):
        async def delete(self, path: str, params: Any = None) -> JSON:
            raise ApiError(500, "Internal Server Error", "etcd timeout")

    handle = Handle(client=Refusing(), activator=lambda pods: activated.extend(pod.name for pod in pods))  # type: ignore[arg-type]
    cluster = Cluster([make_node("a", cpu="1")], [running("victim", "a")], handle=handle)
    preemptor = pending("preemptor")
    assert cluster.schedule(preemptor).nominated_node == "a"
    await settle(handle)
    assert activated == ["preemptor"]
    assert not cluster.plugin.evaluator.being_evicted("uid-victim")  # it may still be running


async def test_no_candidate_clears_an_earlier_nomination() -> None:
    client = FakeClient()
    handle = Handle(client=client)  # type: ignore[arg-type]
    cluster = Cluster([make_node("a", cpu="1")], [running("vip", "a", priority=1000)], handle=handle)
    preemptor = pending("preemptor")
    cluster.nominator.add(preemptor, "gone-node")
    assert cluster.schedule(preemptor).nominated_node == ""  # for the scheduler to write
    await settle(cluster.handle)
    assert cluster.nominator.node_of("uid-preemptor") is None
    assert client.calls == []  # nothing to evict; the status patch is the scheduler's


def test_a_terminating_victim_on_the_nominated_node_stops_another_preemption() -> None:
    victim = running("victim", "a")
    victim["metadata"]["deletionTimestamp"] = OLD
    victim["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    nodes = [make_node("a", cpu="1"), make_node("b", cpu="1")]
    cluster = Cluster(nodes, [victim, running("other", "b")])
    preemptor = pending("preemptor")
    cluster.nominator.add(preemptor, "a")
    result = cluster.schedule(preemptor)
    assert result.message.endswith("preemption: not eligible due to a terminating pod on the nominated node.")
    assert cluster.nominator.node_of("uid-preemptor") == "a"  # left as it is


async def test_a_victim_whose_eviction_was_sent_counts_as_terminating_before_the_watch_shows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Retried before the watch shows its victim terminating, the preemptor must not preempt
    again: it would evict a second pod on the other node."""
    client = FakeClient()
    handle = Handle(client=client)  # type: ignore[arg-type]
    nodes = [make_node("a", cpu="1"), make_node("b", cpu="1")]
    cluster = Cluster(nodes, [running("victim-a", "a"), running("victim-b", "b")], handle=handle)
    preemptor = pending("preemptor")
    nominated = cluster.schedule(preemptor).nominated_node
    await settle(handle)
    again = cluster.schedule(preemptor)
    assert again.message.endswith("preemption: not eligible due to a terminating pod on the nominated node.")
    deletes = [call[1] for call in client.calls if call[0] == "delete"]
    assert deletes == [f"/api/v1/namespaces/default/pods/victim-{nominated}"]

    # Long after the eviction, with the victim still not shown terminating, it no longer counts.
    monkeypatch.setattr(preemption, "EVICTION_NEWS_SECONDS", 0.0)
    assert "not eligible" not in cluster.schedule(preemptor).message


# -- the nominator follows the pod watch ---------------------------------------------------------


def watched(uid: str, *, nominated: str = "", node: str = "", scheduler: str = "default-scheduler") -> JSON:
    pod = make_pod(uid, schedulerName=scheduler)
    pod["metadata"]["uid"] = uid
    if node:
        pod["spec"]["nodeName"] = node
    pod["status"] = {"nominatedNodeName": nominated} if nominated else {}
    return pod


def test_the_nominator_follows_status_nominated_node_name() -> None:
    handle = Handle()
    default_framework(handle)  # DefaultPreemption makes the nominator follow the pod watch
    nominator = handle.nominator
    [watcher] = handle.shared.pod_handlers
    assert watcher is nominator

    nominator.replace(
        [watched("p", nominated="a"), watched("other", nominated="a", scheduler="someone-else")]
    )
    assert [pod.uid for pod in nominator.pods_on("a")] == ["p"]
    nominator.event("MODIFIED", watched("p", nominated="b"))
    assert nominator.node_of("p") == "b"
    nominator.event("MODIFIED", watched("p"))  # the nomination was cleared
    assert nominator.node_of("p") is None

    nominator.add(PodInfo.from_pod(watched("q")), "a")  # the plugin nominates; the watch lags
    nominator.event("MODIFIED", watched("q"))
    assert nominator.node_of("q") == "a"
    nominator.event("MODIFIED", watched("q", nominated="a", node="a"))  # bound
    assert nominator.node_of("q") is None

    nominator.event("ADDED", watched("r", nominated="c"))
    nominator.event("DELETED", watched("r", nominated="c"))
    assert len(nominator) == 0
    nominator.event("ADDED", watched("s", nominated="c"))
    nominator.replace([])
    assert len(nominator) == 0


# -- PreFilter reads other pods: the dry run must see them gone ---------------------------------


def test_victims_that_spreading_counts_are_counted_out_during_the_dry_run() -> None:
    nodes = [make_node(name, cpu="2", labels={"kubernetes.io/hostname": name}) for name in "ab"]
    web = {"app": "web"}
    pods = [
        running("web-1", "a", labels=web, started="2020-01-01T00:00:00Z"),
        running("web-2", "a", labels=web, started="2021-01-01T00:00:00Z"),
        running("vip", "b", cpu="2", priority=1000),
    ]
    constraint = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": web},
    }
    cluster = Cluster(nodes, pods)
    result = cluster.schedule(pending("preemptor", labels=web, topologySpreadConstraints=[constraint]))
    assert result.nominated_node == "a"
    # web-1 alone would leave room for the cpu, not for the spreading (skew 2 > 1).
    assert cluster.victims() == ["web-1", "web-2"]


def test_a_victim_whose_anti_affinity_rejects_the_pod_is_preempted() -> None:
    nodes = [make_node("a", cpu="4", labels={"kubernetes.io/hostname": "a"})]
    loner = running("loner", "a", labels={"app": "loner"})
    term = {"labelSelector": {"matchLabels": {"app": "crowd"}}, "topologyKey": "kubernetes.io/hostname"}
    anti_affinity = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    loner["spec"]["affinity"] = {"podAntiAffinity": anti_affinity}
    cluster = Cluster(nodes, [loner, running("bystander", "a")])
    result = cluster.schedule(pending("preemptor", labels={"app": "crowd"}))
    assert result.nominated_node == "a"
    assert cluster.victims() == ["loner"]  # the bystander is reprieved: it was never in the way


# -- many nodes judged together -----------------------------------------------------------------


def random_cluster(rng: random.Random, num_nodes: int) -> Cluster:
    """Nodes holding pods of mixed priorities, sizes, start times and budgets, some with nominations."""
    nodes = []
    pods = []
    for index in range(num_nodes):
        cpu = rng.choice((4000, 6000))
        nodes.append(make_node(f"n{index}", cpu=f"{cpu}m", pods=rng.choice((4, 110))))
        used = rng.choice((0, 1000, 2000))  # free room left: about this much
        number = 0
        while used < cpu - 500:
            request = rng.choice((500, 1000, 2000))
            used += request
            pod = running(
                f"p{index}-{number}",
                f"n{index}",
                cpu=f"{request}m",
                priority=rng.choice((0, 10, 10, 50, 200)),
                started=rng.choice((OLD, "2021-06-01T00:00:00Z", None)),
                labels={"app": rng.choice(("x", "y", "z"))},
            )
            if rng.random() < 0.15:  # NodePorts: the totals-only dry run moves host ports too
                pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
            pods.append(pod)
            number += 1
    budgets = [pdb("x", "x", allowed=rng.randrange(0, 3)), pdb("y", "y", allowed=0, disrupted=["p0-0"])]
    cluster = Cluster(nodes, pods, budgets=budgets)
    for number in range(rng.randrange(0, 6)):
        nominated = pending(f"nominated-{number}", cpu=rng.choice(("1", "3")), priority=rng.choice((50, 150)))
        cluster.nominator.add(nominated, f"n{rng.randrange(num_nodes)}")
    return cluster


@pytest.mark.parametrize("seed", range(40))
def test_nodes_judged_together_get_the_victims_each_gets_alone(seed: int) -> None:
    """The vectorised dry run (PreFilter's output reused, every node in one filter pass per step)
    picks, on every node, the victims and PDB violations of the node-by-node run that runs
    PreFilter again after each move, and leaves the table as it was."""
    rng = random.Random(seed)
    cluster = random_cluster(rng, 12)
    plugin = cluster.plugin
    ports = [{"containerPort": 80, "hostPort": 8080}] if rng.random() < 0.5 else []
    request = {"cpu": rng.choice(("3", "4", "5"))}
    preemptor = PodInfo.from_pod(
        make_pod("preemptor", priority=100, containers=[container(requests=request, ports=ports)])
    )
    asked: list[CycleState] = []
    original = plugin.select_victims_on_nodes

    def recording(state: CycleState, *args: Any) -> Any:
        asked.append(state)
        return original(state, *args)

    plugin.select_victims_on_nodes = recording  # type: ignore[method-assign]
    cluster.schedule(preemptor)
    plugin.select_victims_on_nodes = original  # type: ignore[method-assign]
    if not asked:
        return  # the pod fits somewhere, or no node is worth a dry run
    assert cluster.framework.filters_read_totals_only(asked[0])  # the dry run moves pods in the totals alone
    table = cluster.table
    slots = [int(slot) for slot in table.node_order()]
    budgets = [Budget.parse(obj) for obj in cluster.handle.informer(POD_DISRUPTION_BUDGETS)]
    before = (table.requested.copy(), table.non_zero_requested.copy(), table.pod_count.copy())
    orders = [list(table.pods[slot]) for slot in slots]
    together = plugin.select_victims_on_nodes(asked[0], preemptor, table, slots, budgets)
    alone_state = CycleState()
    alone_state.write(PRE_FILTER_PASSED, False)  # PreFilter runs again on every move
    alone = plugin.select_victims_on_nodes(alone_state, preemptor, table, slots, budgets)

    def shown(victims: Victims) -> tuple[list[str], int, Code, str]:
        return (
            [pod.name for pod in victims.pods],
            victims.pdb_violations,
            victims.status.code,
            victims.status.message,
        )

    assert [shown(item) for item in together] == [shown(item) for item in alone]
    assert np.array_equal(table.requested, before[0])
    assert np.array_equal(table.non_zero_requested, before[1])
    assert np.array_equal(table.pod_count, before[2])
    assert [list(table.pods[slot]) for slot in slots] == orders  # ties among victims follow it


def test_the_dry_run_in_chunks_finds_the_candidates_a_node_by_node_run_finds() -> None:
    """With 300 nodes and 100 candidates wanted, the dry run judges nodes in chunks yet keeps the
    first 100 from the offset, as a sequential run would."""
    nodes = [make_node(f"n{index}", cpu="4") for index in range(300)]
    pods = [running(f"on-{index}", f"n{index}", cpu="3", priority=index % 7) for index in range(300)]
    cluster = Cluster(nodes, pods)
    cluster.plugin.rng = FixedOffset(250)
    seen: list[int] = []
    original = cluster.plugin.select_victims_on_nodes

    def recording(
        state: CycleState, pod: PodInfo, table: NodeTable, slots: Sequence[int], budgets: Any
    ) -> Any:
        seen.extend(slots)
        return original(state, pod, table, slots, budgets)

    cluster.plugin.select_victims_on_nodes = recording  # type: ignore[method-assign]
    result = cluster.schedule(pending("preemptor", cpu="2"))
    order = cluster.table.node_order().tolist()
    expected = [order[(250 + index) % 300] for index in range(100)]
    assert seen[:100] == expected
    # The lowest-priority victim among those 100 nodes wins (ties: the first in dry-run order).
    names = [cluster.table.names[slot] for slot in expected]
    lowest = min(names, key=lambda name: (int(name[1:]) % 7, names.index(name)))
    assert result.nominated_node == lowest


@pytest.mark.parametrize("seed", range(30))
def test_moves_in_the_totals_alone_decide_as_moves_on_the_whole_table(seed: int) -> None:
    """Nominated pods counted and the dry run's moves, made in the node totals alone (no Filter
    reads more), give the cycle the result, message and victims of moves on the whole table."""

    def outcome(totals_only: bool) -> tuple[object, ...]:
        rng = random.Random(seed)
        cluster = random_cluster(rng, 12)
        ports = [{"containerPort": 80, "hostPort": 8080}] if rng.random() < 0.5 else []
        request = {"cpu": rng.choice(("1", "3", "5"))}
        pod = PodInfo.from_pod(
            make_pod(
                "pod",
                priority=rng.choice((40, 100, 160)),
                containers=[container(requests=request, ports=ports)],
            )
        )
        cluster.framework.rng = random.Random(seed)  # ties among the best nodes broken alike
        cluster.plugin.rng = random.Random(seed)  # and the dry run starting at the same node
        if not totals_only:
            cluster.framework.filters_read_totals_only = lambda state: False  # type: ignore[method-assign]
        result = cluster.schedule(pod)
        note = cluster.state.notes.get("DefaultPreemption")
        candidate = note.candidate if isinstance(note, PreemptionNote) else None
        victims = [victim.name for victim in candidate.victims] if candidate is not None else []
        return result.node_name, result.nominated_node, result.message, victims

    assert outcome(True) == outcome(False)


def test_the_nodes_worth_a_dry_run_are_found_by_slot_or_by_name_alike() -> None:
    """The filter pass hands preemption each rejected node's slot; a diagnosis an extender added
    nodes to (so the slots no longer cover it) is looked up by name, with the same answer."""
    cluster = Cluster([make_node(f"n{index}", cpu="2") for index in range(6)])
    unschedulable = Status.unschedulable("Insufficient cpu")
    unresolvable = Status.unschedulable(
        "node(s) didn't match Pod's node affinity/selector", unresolvable=True
    )
    statuses = {"n4": unschedulable, "n1": unresolvable, "n2": unschedulable, "gone": unschedulable}
    for absent in (None, Status.unschedulable("the rest", unresolvable=False)):
        by_name = Diagnosis(6, node_statuses=dict(statuses), absent_status=absent)
        known = [status for name, status in statuses.items() if name != "gone"]
        slots = cluster.table.slots_of([name for name in statuses if name != "gone"])
        groups = np.array([0 if status is unschedulable else 1 for status in known], dtype=np.int64)
        rejected = RejectedNodes(slots, groups, [unschedulable, unresolvable], list(cluster.table.names))
        by_slot = Diagnosis(6, rejected=rejected, absent_status=absent)
        assert by_slot.slots_and_codes() is not None and by_name.slots_and_codes() is None
        expected = ["n0", "n2", "n3", "n4", "n5"] if absent is not None else ["n2", "n4"]
        for diagnosis in (by_name, by_slot):
            found = [cluster.table.names[slot] for slot in unschedulable_slots(cluster.table, diagnosis)]
            assert sorted(found) == expected


def test_the_one_pass_pick_agrees_with_the_rules_applied_one_after_another() -> None:
    """pickOneNodeForPreemption filters by each rule in turn; the one-pass pick must agree,
    ties included (few distinct values, so that every rule gets to break some)."""
    starts = ("2021-01-01T00:00:00Z", "2022-01-01T00:00:00Z", OLD)

    def by_rules(candidates: list[Candidate]) -> Candidate:
        rules = (
            lambda c: -c.pdb_violations,
            lambda c: -c.victims[0].priority,
            lambda c: -sum(victim.priority + 2**31 for victim in c.victims),
            lambda c: -len(c.victims),
            lambda c: min(
                start_time(v, 0.0) for v in c.victims if v.priority == max(w.priority for w in c.victims)
            ),
        )
        remaining = candidates
        for rule in rules:
            best = max(map(rule, remaining))
            remaining = [candidate for candidate in remaining if rule(candidate) == best]
        return remaining[0]

    rng = random.Random(26)
    for _ in range(300):
        candidates = []
        for index in range(rng.randint(1, 6)):
            victims = sorted(
                (
                    priority_pod(f"v{index}-{number}", rng.choice((0, 1, 5)), rng.choice(starts))
                    for number in range(rng.randint(1, 3))
                ),
                key=lambda victim: importance(victim, 0.0),
            )
            candidates.append(Candidate(f"n{index}", tuple(victims), rng.choice((0, 0, 1))))
        assert pick_one_node(candidates, now=0.0) is by_rules(candidates)
