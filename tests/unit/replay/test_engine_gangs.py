"""Gangs in a replay: PodGroups from the trace's ``group``/``minMember``, Coscheduling's Permit wait
and its timeout on the simulated clock."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from secondary_scheduler.config import load_config
from secondary_scheduler.plugins.registry import Registry, catalog_of, load_registry
from secondary_scheduler.replay.cluster import NodeShape, StartingCluster
from secondary_scheduler.replay.engine import ProfileReplay, ReplayError, ReplayOptions
from secondary_scheduler.replay.report import ProfileResult
from secondary_scheduler.replay.trace import PodArrival, TraceRecord, UsageSample

REGISTRY: Registry = load_registry()
NODE = NodeShape(cpu_millis=4_000, memory_bytes=16 * 2**30)
"""Room for one 3-core member per node."""
PERMIT_TIMEOUT = 60.0
"""Coscheduling's default permitWaitingTimeSeconds (the trace's PodGroups set no scheduleTimeoutSeconds)."""
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: gangs
    plugins:
      queueSort:
        enabled: [{name: Coscheduling}]
        disabled: [{name: "*"}]
      preFilter:
        enabled: [{name: Coscheduling}]
      postFilter:
        enabled: [{name: Coscheduling}]
      permit:
        enabled: [{name: Coscheduling}]
      reserve:
        enabled: [{name: Coscheduling}]
"""
"""Coscheduling as scheduler-plugins documents it, with its default args."""


def member(t: float, group: str, index: int, min_member: int | None) -> PodArrival:
    return PodArrival(
        t=t,
        namespace="default",
        name=f"{group}-{index}",
        end=None,
        requests={"cpu": "3", "memory": "1Gi"},
        group=group,
        min_member=min_member,
    )


def tick(t: float) -> UsageSample:
    """A record that makes ``t`` an instant of the replay (its pod does not exist: it changes nothing)."""
    return UsageSample(t=t, namespace="default", name="nobody", cpu=0.0, memory=0.0)


Watch = dict[float, tuple[frozenset[str], int]]
"""Instant -> (the pods waiting at Permit, the pods bound) after it."""


def replay(
    records: Sequence[TraceRecord], nodes: int, watch: Watch | None = None
) -> tuple[ProfileReplay, ProfileResult]:
    """The replay of ``records``; ``watch`` hears what waits and what is bound after each instant."""
    config = load_config(CONFIG, "gangs.yaml", catalog=catalog_of(REGISTRY)).config
    engine = ProfileReplay(
        config.profiles[0], config, REGISTRY, StartingCluster.generated(nodes, NODE), ReplayOptions()
    )

    def progress(t: float) -> None:
        if watch is not None:
            waiting = frozenset(pod.pod.name for pod in engine.handle.waiting_pods)
            watch[t] = (waiting, int(engine.load.pod_count.sum()))

    return engine, asyncio.run(engine.run(records, progress))


def test_a_gang_that_fits_is_bound_together_when_its_last_member_is_placed() -> None:
    watch: Watch = {}
    records = [member(0, "web", index, 3) for index in range(3)] + [tick(10)]
    engine, result = replay(records, nodes=3, watch=watch)
    assert sorted(engine.placements) == ["default/web-0", "default/web-1", "default/web-2"]
    assert len(set(engine.placements.values())) == 3  # one member per node: each needs 3 of 4 cores
    assert watch[0] == (frozenset(), 3)  # all three bound at their arrival, none left waiting
    assert result.waited_pods == 0 and result.unschedulable_pods == 0
    assert result.decisions == 3
    podgroup = engine.podgroups.get("web", "default") if engine.podgroups is not None else None
    assert podgroup is not None and podgroup["spec"] == {"minMember": 3}


def test_a_gang_that_never_fits_binds_nothing_and_is_released_at_its_timeout_in_simulated_time() -> None:
    """Ten members, room for nine: the unplaced tenth is within podGroupRejectPercentage (10 %), so
    PostFilter leaves the gang waiting, and the nine placed members hold their nodes until the
    Permit timeout (60 s) rejects them. The room they give back lets the tenth in, which waits in
    turn: the gang goes round, timing out every 60 simulated seconds, and never binds."""
    watch: Watch = {}
    records = [member(0, "batch", index, 10) for index in range(10)]
    records += [tick(PERMIT_TIMEOUT - 0.5), tick(PERMIT_TIMEOUT), tick(3600)]
    engine, result = replay(records, nodes=9, watch=watch)
    first_nine = frozenset(f"batch-{index}" for index in range(9))
    assert watch[0] == (first_nine, 0)  # nine placed and held at Permit, the tenth fits nowhere
    assert watch[PERMIT_TIMEOUT - 0.5] == (first_nine, 0)  # still held just before the timeout
    held, bound = watch[PERMIT_TIMEOUT]
    assert "batch-9" in held and bound == 0  # released at the timeout: the tenth took a freed node
    assert engine.placements == {}
    assert result.unschedulable_pods == 10
    # Ten decisions at t=0, then about ten per 60 s round to t=3600 (each round times out).
    assert 10 * 3600 / PERMIT_TIMEOUT * 0.9 <= result.decisions <= 10 * (3600 / PERMIT_TIMEOUT + 1) + 10


def test_a_member_contradicting_its_podgroup_stops_the_replay() -> None:
    with pytest.raises(ReplayError, match="minMember=2 but its PodGroup default/web has minMember 3"):
        replay([member(0, "web", 0, 3), member(1, "web", 1, 2)], nodes=3)


def test_a_group_without_minmember_and_without_a_podgroup_is_refused() -> None:
    with pytest.raises(ReplayError, match="set minMember on the group's records"):
        replay([member(0, "web", 0, None)], nodes=3)
