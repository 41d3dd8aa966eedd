"""Permit that waits, on the real cluster: a Permit plugin of the tests' holds pods as a group.

The scheduler process loads ``tests.cluster.permitgroup:GroupPermit`` with ``--plugin``;
PYTHONPATH names the repository root so that the process can import it wherever pytest
runs from. Pods labelled with a group wait at Permit (assumed on their node: their room is
taken) until three of the group are waiting, then all bind; a group that never completes
times out, its pods are unreserved (their room goes to another pod) and requeued.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import NodeShape
from secsched_devtools.cluster.schedulers import SchedulerRun
from tests.cluster.permitgroup import GROUP_LABEL
from tests.cluster.schedulerproc import (
    create_pods,
    metric_reaches,
    pod_manifest,
    running_scheduler,
    wait_all_bound,
)

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
PERMIT_PLUGIN = "--plugin=tests.cluster.permitgroup:GroupPermit"


def permit_config(timeout_seconds: float) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: secondary-scheduler
    plugins:
      permit:
        enabled:
          - name: GroupPermit
    pluginConfig:
      - name: GroupPermit
        args:
          quorum: 3
          timeoutSeconds: {timeout_seconds}
"""


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler process imports the plugin from this repository's ``tests`` package."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])))


def member(name: str, group: str, **fields: Any) -> dict[str, Any]:
    pod = pod_manifest(name, **fields)
    pod["metadata"]["labels"][GROUP_LABEL] = group
    return pod


async def pods_by_name(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    items = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
    return {pod["metadata"]["name"]: pod for pod in items}


async def failed_notes(api: ApiClient, namespace: str) -> dict[str, list[str]]:
    """Pod name -> the notes of its FailedScheduling events, oldest first."""
    events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
    events.sort(key=lambda event: event.get("eventTime") or "")
    notes: dict[str, list[str]] = {}
    for event in events:
        if event.get("reason") == "FailedScheduling":
            notes.setdefault(event["regarding"]["name"], []).append(event["note"])
    return notes


async def held_at_permit(run: SchedulerRun, namespace: str, names: list[str]) -> None:
    """Until the scheduler's log says GroupPermit holds each of these pods (their room taken)."""

    async def all_held() -> bool:
        text = run.log.read_text(errors="replace")
        return all(f"GroupPermit holds {namespace}/{name} at Permit" in text for name in names)

    await wait_for(all_held, f"{names} held at Permit", timeout=30, interval=0.1)


async def test_a_group_waits_at_permit_until_three_are_there_then_binds_together(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    config = permit_config(timeout_seconds=120)
    with running_scheduler(cluster.kubeconfig, tmp_path, config, extra_args=(PERMIT_PLUGIN,)) as scheduler:
        await create_pods(api, namespace, [pod_manifest("loner")])  # no group: Permit lets it through
        await wait_all_bound(api, namespace, 1, timeout=30)
        await metric_reaches(scheduler, "scheduler_schedule_attempts_total", 'result="scheduled"', 1)
        await create_pods(api, namespace, [member("trio-0", "trio"), member("trio-1", "trio")])
        await held_at_permit(scheduler, namespace, ["trio-0", "trio-1"])
        pods = await pods_by_name(api, namespace)
        assert not pods["trio-0"]["spec"].get("nodeName") and not pods["trio-1"]["spec"].get("nodeName")
        assert scheduler.metric("scheduler_schedule_attempts_total", 'result="scheduled"') == 1
        assert await failed_notes(api, namespace) == {}  # waiting is not failing

        await create_pods(api, namespace, [member("trio-2", "trio")])
        await wait_all_bound(api, namespace, 4, timeout=30)
        # Each bound at its first attempt: the waiting ones were allowed, not timed out and retried.
        scheduled = await metric_reaches(
            scheduler, "scheduler_schedule_attempts_total", 'result="scheduled"', 4
        )
        assert scheduled == 4
        assert scheduler.metric("scheduler_schedule_attempts_total", 'result="unschedulable"') == 0
        assert scheduler.stop() == 0, scheduler.tail()


async def test_an_incomplete_group_times_out_gives_its_room_back_and_is_requeued(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    # A node of our own, so that its room is exactly what this test's pods take.
    [node] = await cluster.add_nodes(1, NodeShape("4", "16Gi"), start=960)  # allocatable 3900m
    pin = {"nodeSelector": {"kubernetes.io/hostname": node}}
    timeout = 5
    try:
        config = permit_config(timeout_seconds=timeout)
        with running_scheduler(cluster.kubeconfig, tmp_path, config, extra_args=(PERMIT_PLUGIN,)) as run:
            duo = [member(f"duo-{i}", "duo", cpu="1700m", **pin) for i in range(2)]
            await create_pods(api, namespace, duo)
            await held_at_permit(run, namespace, ["duo-0", "duo-1"])  # 3400m of the node's 3900m taken
            await create_pods(api, namespace, [pod_manifest("blocker", cpu="2000m", **pin)])

            async def blocker_refused() -> str | None:
                return next(iter((await failed_notes(api, namespace)).get("blocker", [])), None)

            note = await wait_for(blocker_refused, "blocker refused while the group waits", timeout=timeout)
            assert "Insufficient cpu" in note, note

            async def blocker_bound() -> str | None:
                return (await pods_by_name(api, namespace))["blocker"]["spec"].get("nodeName")

            # The group times out; its pods are unreserved and the blocker takes the room at once
            # (not at the unschedulable pool's 5-minute flush).
            freed = await wait_for(blocker_bound, "blocker to take the freed room", timeout=timeout + 10)
            assert freed == node

            async def retried() -> dict[str, list[str]] | None:
                notes = await failed_notes(api, namespace)
                return notes if all(len(notes.get(pod, [])) >= 2 for pod in ("duo-0", "duo-1")) else None

            notes = await wait_for(retried, "the group's pods tried again after the timeout", timeout=30)
        for name in ("duo-0", "duo-1"):
            assert notes[name][0] == f"rejected due to timeout after waiting {timeout}s at plugin GroupPermit"
        # Requeued and tried again: one fits beside the blocker and waits (then times out again),
        # the other no longer fits. Read from the scheduler's log, not the Events: a retry whose
        # pod object has not changed since the last failure joins that Event's series (as
        # upstream's recorder does), keeping its first note.
        retries = [
            line
            for line in run.log.read_text().splitlines()
            if "unable to schedule pod" in line and any(f"/{name}:" in line for name in ("duo-0", "duo-1"))
        ]
        assert any("Insufficient cpu" in line for line in retries), retries
        pods = await pods_by_name(api, namespace)
        assert not pods["duo-0"]["spec"].get("nodeName") and not pods["duo-1"]["spec"].get("nodeName")
    finally:
        await api.delete(f"/api/v1/nodes/{node}")
