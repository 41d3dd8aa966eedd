"""`secsched scheduler` against the real local cluster: it schedules its own pods, as kube-scheduler would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.quantity import resource_value
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import NodeShape
from tests.cluster.schedulerproc import (
    create_pods,
    metric_reaches,
    pod_manifest,
    running_scheduler,
    scheduled_events,
    wait_all_bound,
)
from tests.conftest import CLUSTER_NODES

pytestmark = pytest.mark.cluster


def assert_fits(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """Every node's bound pods request no more than its allocatable."""
    allocatable = {node["metadata"]["name"]: node["status"]["allocatable"] for node in nodes}
    used: dict[str, dict[str, int]] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if not node:
            continue
        for container in pod["spec"]["containers"]:
            for resource, value in (container.get("resources", {}).get("requests") or {}).items():
                totals = used.setdefault(node, {})
                totals[resource] = totals.get(resource, 0) + resource_value(resource, value)
    for node, totals in used.items():
        for resource, total in totals.items():
            assert total <= resource_value(resource, allocatable[node][resource]), (node, resource)


async def test_schedules_its_pods_and_leaves_the_default_schedulers_alone(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    ours = [pod_manifest(f"ours-{i}", cpu="500m") for i in range(30)]
    theirs = [pod_manifest(f"theirs-{i}", scheduler="default-scheduler") for i in range(5)]
    with running_scheduler(cluster.kubeconfig, tmp_path) as scheduler:
        await create_pods(api, namespace, ours + theirs)
        pods = await wait_all_bound(api, namespace, len(ours) + len(theirs))
        scheduled = await metric_reaches(
            scheduler, "scheduler_schedule_attempts_total", 'result="scheduled"', len(ours)
        )
        assert scheduled == len(ours)

        async def all_events() -> list[dict[str, Any]] | None:
            events = await scheduled_events(api, namespace)
            return events if len(events) >= len(ours) + len(theirs) else None

        events = await wait_for(all_events, "a Scheduled event for every pod", timeout=30)
        assert scheduler.stop() == 0, scheduler.tail()  # SIGTERM: a clean shutdown
    by_pod = {event["regarding"]["name"]: event for event in events}
    for pod in pods:
        name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
        expected = "secondary-scheduler" if name.startswith("ours") else "default-scheduler"
        assert by_pod[name]["reportingController"] == expected, name
        assert by_pod[name]["note"] == f"Successfully assigned {namespace}/{name} to {node}"
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    assert_fits(nodes, pods)


async def test_pod_that_fits_nowhere_waits_with_the_reason_then_binds_on_a_new_node(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods/huge"
    with running_scheduler(cluster.kubeconfig, tmp_path):
        await api.create(f"/api/v1/namespaces/{namespace}/pods", pod_manifest("huge", cpu="20"))

        async def unschedulable() -> dict[str, Any] | None:
            pod = await api.get(path)
            conditions = pod["status"].get("conditions") or []
            return next(
                (c for c in conditions if c["type"] == "PodScheduled" and c["status"] == "False"), None
            )

        condition = await wait_for(unschedulable, "PodScheduled=False on pod huge", timeout=30)
        assert condition["reason"] == "Unschedulable"
        assert condition["message"].startswith(
            f"0/{CLUSTER_NODES} nodes are available: {CLUSTER_NODES} Insufficient cpu."
        )

        async def failed_event() -> dict[str, Any] | None:
            events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
            return next((e for e in events if e["reason"] == "FailedScheduling"), None)

        event = await wait_for(failed_event, "a FailedScheduling event", timeout=30)
        assert event["type"] == "Warning" and event["reportingController"] == "secondary-scheduler"
        assert "Insufficient cpu" in event["note"]

        [big] = await cluster.add_nodes(1, NodeShape("32", "128Gi"), start=900)
        try:

            async def bound() -> str | None:
                return (await api.get(path))["spec"].get("nodeName")

            assert await wait_for(bound, "pod huge to bind to the new node", timeout=60) == big
        finally:
            await api.delete(path, params={"gracePeriodSeconds": 0})
            await api.delete(f"/api/v1/nodes/{big}")
