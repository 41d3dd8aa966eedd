"""The scheduler at 100 nodes: 1,000 pods, a leader killed mid-run, an API server restart.

These use a cluster of their own (100 KWOK nodes), so that restarting its API server does
not disturb the other tests.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster
from tests.cluster.schedulerproc import (
    SECONDARY_CONFIG,
    create_pods,
    metric_reaches,
    pod_manifest,
    running_scheduler,
    scheduled_events,
    wait_all_bound,
)
from tests.cluster.test_scheduler import assert_fits
from tests.conftest import fresh_namespace

pytestmark = pytest.mark.cluster
NODES = 100


@pytest.fixture(scope="module")
def big_cluster() -> Iterator[LocalCluster]:
    options = ClusterOptions(name=f"pytest-scale-{os.getpid()}", nodes=NODES, prometheus=False)
    with LocalCluster(options) as local:
        yield local


@pytest.fixture
async def big_api(big_cluster: LocalCluster) -> AsyncIterator[ApiClient]:
    async with big_cluster.api() as client:
        yield client


@pytest.fixture
async def big_namespace(big_api: ApiClient) -> AsyncIterator[str]:
    async with fresh_namespace(big_api, "s") as name:
        yield name


def varied_pods(prefix: str, count: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    cpus = ["100m", "250m", "500m", "1", "2"]
    memories = ["128Mi", "512Mi", "1Gi", "2Gi", "4Gi"]
    return [
        pod_manifest(f"{prefix}-{i}", cpu=rng.choice(cpus), memory=rng.choice(memories)) for i in range(count)
    ]


def election_config(namespace: str) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 8s
  renewDeadline: 6s
  retryPeriod: 2s
  resourceName: secondary-scheduler
  resourceNamespace: {namespace}
clientConnection:
  qps: 200
  burst: 400
profiles:
  - schedulerName: secondary-scheduler
"""


async def test_a_thousand_pods_on_a_hundred_nodes(
    big_cluster: LocalCluster, big_api: ApiClient, big_namespace: str, tmp_path: Path
) -> None:
    ours = varied_pods("vm", 1000, seed=1)
    theirs = [pod_manifest(f"web-{i}", scheduler="default-scheduler") for i in range(50)]
    with running_scheduler(big_cluster.kubeconfig, tmp_path) as scheduler:
        await create_pods(big_api, big_namespace, ours + theirs)
        pods = await wait_all_bound(big_api, big_namespace, len(ours) + len(theirs), timeout=300)
        scheduled = await metric_reaches(
            scheduler, "scheduler_schedule_attempts_total", 'result="scheduled"', len(ours)
        )
        assert scheduled == len(ours)
    nodes = (await big_api.list_all("/api/v1/nodes"))["items"]
    assert_fits(nodes, pods)
    # Ours has exited (SIGTERM), having written every Event it queued; upstream's may still come.
    events = await scheduled_events(big_api, big_namespace)
    reporters = {event["regarding"]["name"]: event["reportingController"] for event in events}
    assert all(reporters.get(f"web-{i}") in (None, "default-scheduler") for i in range(50))
    missing = [f"vm-{i}" for i in range(1000) if reporters.get(f"vm-{i}") != "secondary-scheduler"]
    assert not missing, f"{len(missing)} of ours' pods without their Scheduled Event: {missing[:10]}"


async def test_killing_the_leader_hands_over_without_double_binding(
    big_cluster: LocalCluster, big_api: ApiClient, big_namespace: str, tmp_path: Path
) -> None:
    config = election_config(big_namespace)
    pods = varied_pods("le", 600, seed=2)
    with (
        running_scheduler(big_cluster.kubeconfig, tmp_path, config, name="replica-a") as first,
        running_scheduler(big_cluster.kubeconfig, tmp_path, config, name="replica-b") as second,
    ):
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{big_namespace}/leases/secondary-scheduler"

        async def one_leader() -> bool:
            leading = [
                await asyncio.to_thread(run.metric, "leader_election_master_status")
                for run in (first, second)
            ]
            return sum(leading) == 1

        await wait_for(one_leader, "one of the two replicas to lead", timeout=30, interval=0.5)
        leader, standby = (
            (first, second) if first.metric("leader_election_master_status") == 1 else (second, first)
        )
        holder_before = (await big_api.get(lease_path))["spec"]["holderIdentity"]
        creating = asyncio.create_task(create_pods(big_api, big_namespace, pods, concurrency=8))
        await wait_all_bound(big_api, big_namespace, 150, timeout=120)
        leader.process.kill()  # SIGKILL mid-run: no chance to release the lease
        await creating
        bound = await wait_all_bound(big_api, big_namespace, len(pods), timeout=180)
        assert standby.metric("leader_election_master_status") == 1
        await metric_reaches(standby, "scheduler_schedule_attempts_total", 'result="scheduled"', 1)
        assert (await big_api.get(lease_path))["spec"]["holderIdentity"] != holder_before
    assert len(bound) == len(pods)
    events = await scheduled_events(big_api, big_namespace)
    per_pod = Counter(event["regarding"]["name"] for event in events)
    assert max(per_pod.values()) == 1, [name for name, count in per_pod.items() if count > 1]


async def test_scheduler_recovers_from_an_api_server_restart(
    big_cluster: LocalCluster, big_api: ApiClient, big_namespace: str, tmp_path: Path
) -> None:
    pods = varied_pods("rs", 400, seed=3)
    # No leader election here: a leader that cannot renew for longer than renewDeadline exits by
    # design (as kube-scheduler does), which the election test covers.
    config = SECONDARY_CONFIG.replace("qps: 500", "qps: 40").replace("burst: 1000", "burst: 40")
    await create_pods(big_api, big_namespace, pods)
    with running_scheduler(big_cluster.kubeconfig, tmp_path, config) as scheduler:
        await wait_all_bound(big_api, big_namespace, 80, timeout=60)
        await asyncio.to_thread(big_cluster.restart, "kube-apiserver", 3.0)
        bound = await wait_all_bound(big_api, big_namespace, len(pods), timeout=180)
        assert scheduler.process.poll() is None, scheduler.tail()
    assert len(bound) == len(pods)
