"""Repeated FailedScheduling events become a series, in `secsched scheduler` as in kube-scheduler.

Both schedulers run side by side, each with one pod that fits nowhere (more CPU than any
node has), so every try fails with the same note. Deleting an assigned pod is an event
NodeResourcesFit answers with "retry" in both, so each pod fails again and again. client-go's
events.k8s.io/v1 broadcaster keys events on the regarding object *with its resourceVersion*:
the first failure's Event is written for the pod as created; the PodScheduled=False status
then changes the pod, so the second failure starts a new Event and the later ones make it a
series (patched with ``series.count`` 2 at once; the rest are counted for the 6-minute timer).
Ours must leave the same Events behind.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, start_scheduler
from tests.cluster.schedulerproc import create_pods, pod_manifest

pytestmark = pytest.mark.cluster

SCHEDULERS = {OURS: "secondary-scheduler", UPSTREAM: "upstream-scheduler"}
CHURN_INTERVAL = 2.0
"""How often the test retries both pods (by binding and deleting a pod) until the series shows."""


def config(scheduler_name: str) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: {scheduler_name}
"""


async def failed_events(api: ApiClient, namespace: str, pod: str) -> list[dict[str, Any]]:
    items = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
    found = [e for e in items if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == pod]
    return sorted(found, key=lambda event: event["eventTime"])


def shape(event: dict[str, Any]) -> tuple[Any, ...]:
    """What must match between the two schedulers' Events (names, times and counts aside)."""
    return (
        sorted(event),
        sorted(event["regarding"]),
        sorted(event.get("series") or {}),
        event["type"],
        event["action"],
        event["reason"],
        event["note"],
    )


async def churn(api: ApiClient, namespace: str, node: str, index: int) -> None:
    """Bind a small pod to `node` and delete it: the deletion retries both pods."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    await api.create(path, pod_manifest(f"churn-{index}", scheduler="nobody", cpu="10m", nodeName=node))
    await api.delete(f"{path}/churn-{index}", params={"gracePeriodSeconds": 0})


async def test_repeated_failures_become_one_series_in_both_schedulers(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    node = (await api.list_all("/api/v1/nodes"))["items"][0]["metadata"]["name"]
    pods = [pod_manifest(f"retry-{kind}", scheduler=name, cpu="200") for kind, name in SCHEDULERS.items()]
    runs = [
        start_scheduler(kind, config(name), cluster.kubeconfig, tmp_path, name=kind)
        for kind, name in SCHEDULERS.items()
    ]
    seen: dict[str, list[dict[str, Any]]] = {}
    churned = itertools.count()

    async def series_in_both() -> dict[str, list[dict[str, Any]]] | None:
        """Retry both pods once more (a churn), then look for the series in both."""
        await churn(api, namespace, node, next(churned))
        seen.update({kind: await failed_events(api, namespace, f"retry-{kind}") for kind in SCHEDULERS})
        ok = all(any((e.get("series") or {}).get("count", 0) >= 2 for e in seen[k]) for k in seen)
        return dict(seen) if ok else None

    try:
        await create_pods(api, namespace, pods)
        for kind in SCHEDULERS:

            async def first(kind: str = kind) -> list[dict[str, Any]] | None:
                return await failed_events(api, namespace, f"retry-{kind}") or None

            await wait_for(first, f"a FailedScheduling event from {kind}", timeout=30)
        try:
            # Each poll retries both pods (their backoff grows from 1 to 10 s), until both show it.
            events = await wait_for(
                series_in_both, "a FailedScheduling series from both", timeout=90, interval=CHURN_INTERVAL
            )
        except TimeoutError as error:
            summary = {k: [(e.get("series"), e["note"][:50]) for e in found] for k, found in seen.items()}
            raise AssertionError(f"{error}: {summary}") from None
    finally:
        for run in runs:
            run.stop()

    shapes = {}
    for kind, name in SCHEDULERS.items():
        pod = await api.get(f"/api/v1/namespaces/{namespace}/pods/retry-{kind}")
        found = events[kind]
        for event in found:
            assert event["reportingController"] == name
            assert event["reportingInstance"].startswith(f"{name}-")
            assert (event["type"], event["action"]) == ("Warning", "Scheduling")
            regarding = event["regarding"]
            assert (regarding["apiVersion"], regarding["kind"]) == ("v1", "Pod")
            assert (regarding["namespace"], regarding["name"]) == (namespace, f"retry-{kind}")
            assert regarding["uid"] == pod["metadata"]["uid"] and regarding["resourceVersion"]
            assert event["metadata"]["name"].startswith(f"retry-{kind}.")
            assert event["note"].startswith("0/") and "Insufficient cpu" in event["note"]
        # The pod as created, then the pod with its PodScheduled=False condition: two Events,
        # the second a series; no more, however many retries (the note never changed).
        assert [bool(event.get("series")) for event in found] == [False, True], found
        assert found[1]["regarding"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
        assert found[0]["regarding"]["resourceVersion"] != found[1]["regarding"]["resourceVersion"]
        assert found[1]["series"]["count"] == 2, "the count beyond 2 waits for the finishSeries timer"
        shapes[kind] = [shape(event) for event in found]
    assert shapes[OURS] == shapes[UPSTREAM]
