"""Coscheduling (gang scheduling) on the real control plane: ours and upstream's, case by case.

Both schedulers run for the whole module, each with a profile ``gang-<kind>`` enabling
Coscheduling as scheduler-plugins' docs show (queueSort replacing PrioritySort, preFilter,
postFilter, permit, reserve) and upstream's default args (``podGroupBackoffSeconds: 0``): a
gang that cannot fit is retried in a short burst of rounds, which ends with every member
rejected at Permit and holding nothing (upstream by a race of its binding goroutines, ours
by modelling that race's usual outcome: see ``plugins.coscheduling.plugin``), so other
pods get in at once; a PodGroup update (the status controller's writes) retries it. The
Permit case runs its own process per scheduler, profile ``gang-<kind>-lenient`` with
``podGroupRejectPercentage: 20`` (a gang short of one pod in eight is not rejected in
PostFilter, so its placed pods go on waiting at Permit): upstream refuses profiles whose
queueSort args differ. Every case runs once per scheduler, on the session's 5 KWOK nodes
(16 cores each, 15900m allocatable): pods are sized in cpu so that the room is what the
case needs. Each case prints its figures (bound pods, time to bind the gang, spread of the
bind times) as ``coscheduling[case/kind]: ...``.

The PodGroup status case runs with ours only: upstream's scheduler binary has no PodGroup
controller (scheduler-plugins ships it as a separate controller binary), so there the
status stays empty.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, SchedulerRun, start_scheduler
from tests.cluster.schedulerproc import create_pods, pod_manifest

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"
KINDS = (OURS, UPSTREAM)
TIMEOUT = 5
"""scheduleTimeoutSeconds of the cases' PodGroups: how long placed pods wait for the rest."""
WAIT_LABEL = "secsched.io/gang-test"
VERBOSITY = (f"--v={os.environ['COSCHEDULING_TEST_V']}",) if os.environ.get("COSCHEDULING_TEST_V") else ()
"""Set COSCHEDULING_TEST_V (e.g. 4) to log both schedulers at that level, for timing studies."""


def config(scheduler: str, reject_percentage: int = 10, backoff: int = 0) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 500
  burst: 1000
profiles:
  - schedulerName: {scheduler}
    plugins:
      queueSort:
        enabled: [{{name: Coscheduling}}]
        disabled: [{{name: "*"}}]
      preFilter:
        enabled: [{{name: Coscheduling}}]
      postFilter:
        enabled: [{{name: Coscheduling}}]
      permit:
        enabled: [{{name: Coscheduling}}]
      reserve:
        enabled: [{{name: Coscheduling}}]
    pluginConfig:
      - name: Coscheduling
        args:
          permitWaitingTimeSeconds: 10
          podGroupRejectPercentage: {reject_percentage}
          podGroupBackoffSeconds: {backoff}
"""


@pytest.fixture(scope="module")
def schedulers(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, SchedulerRun]]:
    """Ours and upstream's, both running (each schedules only its own profiles' pods)."""
    directory = tmp_path_factory.mktemp("coscheduling")
    runs: dict[str, SchedulerRun] = {}
    try:
        for kind in KINDS:
            runs[kind] = start_scheduler(
                kind, config(f"gang-{kind}"), cluster.kubeconfig, directory, name=kind, extra_args=VERBOSITY
            )
        yield runs
    finally:
        for run in runs.values():
            run.stop()


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest, schedulers: dict[str, SchedulerRun]) -> str:
    assert schedulers[request.param].process.poll() is None, schedulers[request.param].tail()
    return str(request.param)


# -- objects ----------------------------------------------------------------------------------


def podgroup(name: str, min_member: int, timeout: int = TIMEOUT) -> JSON:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout},
    }


def member(name: str, group: str | None, scheduler: str, cpu: str, **spec: Any) -> JSON:
    pod = pod_manifest(name, scheduler=scheduler, cpu=cpu, **spec)
    pod["spec"]["terminationGracePeriodSeconds"] = 0
    if group:
        pod["metadata"]["labels"][GROUP_LABEL] = group
    return pod


async def create_group(api: ApiClient, namespace: str, group: JSON) -> None:
    await api.create(PODGROUPS.format(namespace=namespace), group)


async def pods_of(api: ApiClient, namespace: str) -> dict[str, JSON]:
    items = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
    return {pod["metadata"]["name"]: pod for pod in items}


def bound(pods: dict[str, JSON], prefix: str = "") -> list[str]:
    return sorted(
        name for name, pod in pods.items() if name.startswith(prefix) and pod["spec"].get("nodeName")
    )


async def wait_bound(api: ApiClient, namespace: str, prefix: str, count: int, timeout: float) -> float:
    """Until ``count`` pods named ``prefix*`` are bound; returns the seconds it took."""
    started = time.monotonic()

    async def done() -> bool:
        return len(bound(await pods_of(api, namespace), prefix)) >= count

    await wait_for(done, f"{count} pods {prefix}* bound in {namespace}", timeout=timeout, interval=0.2)
    return time.monotonic() - started


def unschedulable(pod: JSON) -> bool:
    """Whether the scheduler has tried the pod and said it cannot place it (PodScheduled=False)."""
    conditions = pod.get("status", {}).get("conditions") or ()
    return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)


async def refused(api: ApiClient, namespace: str, names: list[str], timeout: float = 60) -> list[str]:
    """Until the scheduler has tried and refused each of these pods; returns those bound meanwhile.

    A pod that waits at Permit is not refused yet: so once every pod named here is, the
    scheduler has made up its mind about all of them (the bound list should be empty).
    """
    early: set[str] = set()

    async def all_refused() -> bool:
        pods = await pods_of(api, namespace)
        early.update(name for name in names if pods[name]["spec"].get("nodeName"))
        return all(unschedulable(pods[name]) for name in names)

    await wait_for(all_refused, f"{names} to be refused in {namespace}", timeout=timeout, interval=0.2)
    return sorted(early)


async def bind_spread(api: ApiClient, namespace: str, prefix: str, count: int) -> float:
    """Seconds between the first and the last Scheduled event of the ``count`` pods named ``prefix*``."""
    times = await scheduled_times(api, namespace, prefix, count)
    return max(times.values()) - min(times.values())


async def scheduled_times(api: ApiClient, namespace: str, prefix: str, count: int) -> dict[str, float]:
    """Pod -> the eventTime of its Scheduled event (epoch seconds), for the ``count`` pods ``prefix*``.

    A scheduler sends its Events after the Binding (client-go from a goroutine of its own, ours
    once no pod is on its way to a node), so a pod can be bound before its Event exists: this
    waits until every pod's Scheduled event is there rather than reading a partial list.
    """
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"

    async def every_one() -> dict[str, float] | None:
        events = (await api.list_all(path))["items"]
        times = {
            event["regarding"]["name"]: _parse(event.get("eventTime"))
            for event in events
            if event.get("reason") == "Scheduled" and event["regarding"]["name"].startswith(prefix)
        }
        return times if len(times) >= count else None

    return await wait_for(every_one, f"{count} Scheduled events for pods {prefix}*", timeout=30, interval=0.2)


def _parse(raw: str | None) -> float:
    assert raw, "a Scheduled event without eventTime"
    return datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()


async def delete_pods(api: ApiClient, namespace: str, prefix: str = "") -> None:
    """Delete the pods (at once: grace 0) and wait until they are gone, so the next step has their room."""
    for name in list(await pods_of(api, namespace)):
        if name.startswith(prefix):
            await api.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", params={"gracePeriodSeconds": 0})

    async def gone() -> bool:
        return not any(name.startswith(prefix) for name in await pods_of(api, namespace))

    await wait_for(gone, f"pods {prefix}* of {namespace} deleted", timeout=60)


def report(case: str, kind: str, **figures: object) -> None:
    shown = ", ".join(
        f"{key}={value:.2f}" if isinstance(value, float) else f"{key}={value}"
        for key, value in figures.items()
    )
    print(f"coscheduling[{case}/{kind}]: {shown}")


# -- the cases --------------------------------------------------------------------------------


async def test_a_gang_that_fits_is_bound_all_at_once(api: ApiClient, namespace: str, kind: str) -> None:
    """(a) 8 pods of 3 cores (25 fit): all 8 bound, within one short burst."""
    await create_group(api, namespace, podgroup("fits", 8))
    started = time.monotonic()
    await create_pods(api, namespace, [member(f"fits-{i}", "fits", f"gang-{kind}", "3") for i in range(8)])
    await wait_bound(api, namespace, "fits-", 8, timeout=60)
    elapsed = time.monotonic() - started
    spread = await bind_spread(api, namespace, "fits-", 8)
    report("a", kind, bound=8, seconds_to_bind_gang=elapsed, bind_spread_seconds=spread)
    assert spread < 2.0
    await delete_pods(api, namespace)


async def test_placed_pods_wait_at_permit_until_the_last_member_is_placed(
    cluster: LocalCluster, api: ApiClient, namespace: str, kind: str, tmp_path: Path
) -> None:
    """(a) 7 pods placeable, the 8th not (a node label it needs is missing): nothing is bound while
    the 7 wait at Permit; once a node gets the label, the 8th is placed and all 8 are bound together."""
    scheduler = f"gang-{kind}-lenient"
    await create_group(api, namespace, podgroup("late", 8, timeout=60))
    pods = [member(f"late-{i}", "late", scheduler, "1") for i in range(7)]
    pods.append(member("late-7", "late", scheduler, "1", nodeSelector={WAIT_LABEL: namespace}))
    # kube-scheduler wants the same queueSort (args included) in every profile: a process of its own.
    lenient = start_scheduler(
        kind,
        config(scheduler, 20),
        cluster.kubeconfig,
        tmp_path,
        name=f"{kind}-lenient",
        extra_args=VERBOSITY,
    )
    try:
        await create_pods(api, namespace, pods)
        # The 8th is refused (queue order puts it last: the 7 are at Permit by then); the 7 wait.
        early = await refused(api, namespace, ["late-7"])
        early += bound(await pods_of(api, namespace), "late-")
        assert early == [], f"bound before the 8th was placed: {early}"
        started, labelled_at = time.monotonic(), time.time()
        await api.patch("/api/v1/nodes/kwok-node-0", {"metadata": {"labels": {WAIT_LABEL: namespace}}})
        await wait_bound(api, namespace, "late-", 8, timeout=30)
        elapsed = time.monotonic() - started
    finally:
        await api.patch("/api/v1/nodes/kwok-node-0", {"metadata": {"labels": {WAIT_LABEL: None}}})
        lenient.stop()
    times = await scheduled_times(api, namespace, "late-", 8)
    # None was bound before the 8th could be placed (the schedulers run on this machine's clock).
    early = sorted(name for name, at in times.items() if at < labelled_at)
    assert early == [], f"bound before the 8th could be placed: {early}"
    spread = max(times.values()) - min(times.values())
    report(
        "a-permit",
        kind,
        bound_while_8th_missing=0,
        seconds_to_bind_after_8th_fits=elapsed,
        bind_spread_seconds=spread,
    )
    assert spread < 2.0
    await delete_pods(api, namespace)


async def test_a_gang_that_cannot_fit_binds_nothing_and_holds_nothing(
    api: ApiClient, namespace: str, kind: str
) -> None:
    """(b) minMember 8, pods of 9 cores: one per node, room for 5. Nothing is bound; after the
    timeout, 5 ordinary pods of the same size take the room."""
    scheduler = f"gang-{kind}"
    await create_group(api, namespace, podgroup("big", 8))
    await create_pods(api, namespace, [member(f"big-{i}", "big", scheduler, "9") for i in range(8)])
    early = await refused(api, namespace, [f"big-{i}" for i in range(8)])
    assert early == [], f"pods of a gang that cannot fit were bound: {early}"
    await create_pods(api, namespace, [member(f"other-{i}", None, scheduler, "9") for i in range(5)])
    elapsed = await wait_bound(api, namespace, "other-", 5, timeout=60)
    pods = await pods_of(api, namespace)
    assert bound(pods, "big-") == []
    report("b", kind, gang_bound=0, others_bound=5, seconds_for_others_to_bind=elapsed)
    if kind == OURS:
        # Ours keeps the PodGroup status as upstream's controller would: 8 pods, none running.
        status = await podgroup_status(
            api, namespace, "big", lambda status: status.get("phase") == "Scheduling"
        )
        assert status.get("running", 0) == 0
    await delete_pods(api, namespace)


async def test_two_competing_gangs_do_not_deadlock(api: ApiClient, namespace: str, kind: str) -> None:
    """(c) Two gangs of 8 pods of 5 cores (3 per node: 15 fit): each fits alone, not both. One is
    bound fully, the other not at all; once the first is deleted, the second is bound."""
    scheduler = f"gang-{kind}"
    await create_group(api, namespace, podgroup("first", 8))
    await create_group(api, namespace, podgroup("second", 8))
    started = time.monotonic()
    await create_pods(api, namespace, [member(f"first-{i}", "first", scheduler, "5") for i in range(8)])
    await create_pods(api, namespace, [member(f"second-{i}", "second", scheduler, "5") for i in range(8)])

    async def one_gang_bound() -> str | None:
        pods = await pods_of(api, namespace)
        counts = {gang: len(bound(pods, f"{gang}-")) for gang in ("first", "second")}
        full = [gang for gang, count in counts.items() if count == 8]
        return full[0] if full else None

    winner = await wait_for(one_gang_bound, "one gang fully bound", timeout=60, interval=0.2)
    first_elapsed = time.monotonic() - started
    loser = "second" if winner == "first" else "first"
    # Every pod of the loser tried and refused: it has bound nothing (and holds nothing: the
    # winner is whole).
    early = await refused(api, namespace, [f"{loser}-{i}" for i in range(8)])
    assert early == [], f"pods of the losing gang were bound: {early}"
    await delete_pods(api, namespace, f"{winner}-")
    second_elapsed = await wait_bound(api, namespace, f"{loser}-", 8, timeout=90)
    report(
        "c",
        kind,
        winner=winner,
        winner_bound=8,
        loser_bound_meanwhile=0,
        seconds_to_bind_winner=first_elapsed,
        seconds_to_bind_loser_after_winner_deleted=second_elapsed,
    )
    await delete_pods(api, namespace)


async def podgroup_status(api: ApiClient, namespace: str, name: str, ready: Any, timeout: float = 30) -> JSON:
    path = f"{PODGROUPS.format(namespace=namespace)}/{name}"

    async def probe() -> JSON | None:
        status = (await api.get(path)).get("status") or {}
        return status if ready(status) else None

    return await wait_for(probe, f"PodGroup {name}'s status", timeout=timeout, interval=0.2)


async def test_podgroup_status_follows_its_pods_as_upstreams_controller(
    api: ApiClient, namespace: str, schedulers: dict[str, SchedulerRun]
) -> None:
    """(d) Ours only (upstream's scheduler has no PodGroup controller): Pending with too few pods,
    Running with minMember running (KWOK runs bound pods), Pending again when one is deleted."""
    await create_group(api, namespace, podgroup("job", 3))
    assert (await podgroup_status(api, namespace, "job", lambda s: bool(s.get("phase")))) == {
        "phase": "Pending"
    }
    await create_pods(api, namespace, [member(f"job-{i}", "job", "gang-ours", "1") for i in range(2)])
    # Coscheduling refuses both (too few for minMember): ours has seen them; the group stays Pending.
    assert await refused(api, namespace, ["job-0", "job-1"]) == []
    assert (await podgroup_status(api, namespace, "job", lambda s: True)) == {"phase": "Pending"}
    await create_pods(api, namespace, [member("job-2", "job", "gang-ours", "1")])
    running = await podgroup_status(api, namespace, "job", lambda s: s.get("phase") == "Running")
    assert running == {"phase": "Running", "running": 3}
    await delete_pods(api, namespace, "job-2")
    short = await podgroup_status(api, namespace, "job", lambda s: s.get("phase") == "Pending")
    assert short == {"phase": "Pending", "running": 2}
    report("d", OURS, phases="Pending->Scheduling->Running->Pending", running=3)
    await delete_pods(api, namespace)
