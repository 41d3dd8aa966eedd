"""A scheduler that starts to lead writes the Scheduled Events its killed predecessor did not.

The predecessor is played by this test: it binds pods with Bindings of its own and writes no
Event, as a scheduler killed between a Binding and its Event leaves them. Ours, started next,
writes the Event of each pod its profile's name was bound for in the window before it led, and
of no other: not of a pod whose Event exists, not of one bound before the window, not of one
created on its node (whose nodeName a client wrote).
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from tests.cluster.schedulerproc import SECONDARY_CONFIG, create_pods, pod_manifest, running_scheduler

pytestmark = pytest.mark.cluster

PROFILE = "missing-scheduled-events"
"""The profile of this module's scheduler and pods: no other test's pod names it."""
CONFIG = SECONDARY_CONFIG.replace("schedulerName: secondary-scheduler", f"schedulerName: {PROFILE}")
WRITTEN = re.compile(r"wrote (\d+) Scheduled Events a previous leader left unwritten \(of (\d+) pods")


async def _bind(api: ApiClient, namespace: str, name: str, node: str) -> None:
    """A Binding as a scheduler posts it, and no Event."""
    await api.create(
        f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        },
    )


async def _scheduled_events(api: ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await api.get(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
        {"fieldSelector": f"reason=Scheduled,regarding.name={name}"},
    )
    return list(listed["items"])


async def _pod(api: ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return await api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")


async def test_the_next_leader_writes_the_scheduled_events_its_predecessor_left_unwritten(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    nodes = sorted(node["metadata"]["name"] for node in (await api.get("/api/v1/nodes"))["items"])
    node = nodes[0]
    names = ("unwritten", "long-ago", "with-event", "pending")
    await create_pods(api, namespace, [pod_manifest(name, scheduler=PROFILE) for name in names])
    on_node = pod_manifest("created-on-node", scheduler=PROFILE)
    on_node["spec"]["nodeName"] = node
    await create_pods(api, namespace, [on_node])
    for name in ("unwritten", "long-ago", "with-event"):
        await _bind(api, namespace, name, node)

    # "long-ago" was bound before the window: its Event may have expired, and must not come back.
    hour_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    await api.patch(
        f"/api/v1/namespaces/{namespace}/pods/long-ago/status",
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "True",
                        "lastTransitionTime": hour_ago.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    }
                ]
            }
        },
        patch_type="strategic",
    )
    # "with-event" has the Event its scheduler wrote before it died.
    pod = await _pod(api, namespace, "with-event")
    await api.create(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "with-event.predecessor", "namespace": namespace},
            "eventTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": PROFILE,
            "reportingInstance": "predecessor",
            "action": "Binding",
            "reason": "Scheduled",
            "type": "Normal",
            "note": f"Successfully assigned {namespace}/with-event to {node}",
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "name": "with-event",
                "uid": pod["metadata"]["uid"],
            },
        },
    )

    with running_scheduler(cluster.kubeconfig, tmp_path, CONFIG, name="next-leader") as run:

        async def logged() -> re.Match[str] | None:
            return WRITTEN.search(run.log.read_text(errors="replace"))

        match = await wait_for(logged, "the log line of the Events written for the predecessor", 60)
        assert match is not None
        # Two pods were bound by Bindings inside the window (unwritten, with-event); one lacked its Event.
        assert (int(match.group(1)), int(match.group(2))) == (1, 2), run.tail()

        async def unwritten_written() -> list[dict[str, Any]]:
            return await _scheduled_events(api, namespace, "unwritten")

        events = await wait_for(unwritten_written, "the Scheduled Event of the pod bound without one", 30)
        assert len(events) == 1
        event = events[0]
        assert event["note"] == f"Successfully assigned {namespace}/unwritten to {node}"
        written = (event["type"], event["action"], event["reportingController"])
        assert written == ("Normal", "Binding", PROFILE)
        assert event["regarding"]["uid"] == (await _pod(api, namespace, "unwritten"))["metadata"]["uid"]

        async def pending_scheduled() -> list[dict[str, Any]]:
            return await _scheduled_events(api, namespace, "pending")

        await wait_for(pending_scheduled, "the pending pod scheduled by the new leader", 30)

    assert len(await _scheduled_events(api, namespace, "with-event")) == 1
    assert await _scheduled_events(api, namespace, "long-ago") == []
    assert await _scheduled_events(api, namespace, "created-on-node") == []
