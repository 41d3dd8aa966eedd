"""Growing the benchmark's cluster: thousands of KWOK nodes, Ready from the start.

`LocalCluster.add_nodes` creates nodes without status and lets KWOK initialise each
(conditions, addresses, phase): four at a time, a few per second on a busy 2-CPU
machine, so 5,000 nodes would take a quarter of an hour. The benchmark creates the same
nodes (`plan_nodes`) already Ready, so KWOK only has to hold each node's Lease (its
heartbeat), which it does faster. Before measuring, we
wait until every node has its Lease and kube-controller-manager has lifted the not-ready
taint that admission gives every new node, so the cluster has settled.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster.nodes import NodeShape, plan_nodes

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
_CONDITIONS = (
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("NetworkUnavailable", "False", "RouteCreated", "RouteController created a route"),
)


def ready_node_manifests(count: int, shape: NodeShape, zones: int, start: int) -> list[dict[str, Any]]:
    """`plan_nodes`' manifests, each with the conditions KWOK's initialisation would set.

    Not its ``phase: Running``: KWOK's status heartbeat selects nodes by that phase and, at
    5,000 nodes, patched about 80 a second (a real kubelet with a Lease reports status every
    5 minutes when nothing changes), which alone kept more than one of the 2 CPUs busy.
    Without it KWOK only renews each node's Lease, which is what the node controller checks.
    """
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    manifests = plan_nodes(count, shape, zones, start=start)
    for manifest in manifests:
        manifest["status"]["conditions"] = [
            {
                "type": kind,
                "status": value,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
            for kind, value, reason, message in _CONDITIONS
        ]
    return manifests


async def grow(
    api: ApiClient,
    start: int,
    count: int,
    shape: NodeShape,
    zones: int,
    report: Callable[[str], None],
    chunk: int = 1000,
    concurrency: int = 32,
) -> None:
    """Add nodes start..start+count-1, a chunk at a time, each chunk settled before the next.

    Settled: KWOK holds a Lease for every node, and kube-controller-manager has lifted the
    not-ready taint that admission puts on every new node. Chunks keep each node's wait for
    its first Lease well inside the node-monitor grace period.
    """
    done = 0
    while done < count:
        size = min(chunk, count - done)
        await _create(api, ready_node_manifests(size, shape, zones, start + done), concurrency)
        done += size
        await wait_settled(api, start + done, report)


async def _create(api: ApiClient, manifests: list[dict[str, Any]], concurrency: int) -> None:
    pending = iter(manifests)

    async def worker() -> None:
        for manifest in pending:
            try:
                await api.create("/api/v1/nodes", manifest)
            except ApiError as error:
                if not error.conflict:
                    raise

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def wait_settled(
    api: ApiClient, total: int, report: Callable[[str], None], timeout: float = 900.0
) -> None:
    """Until there are ``total`` node Leases and no node is tainted not-ready."""

    async def counts() -> tuple[int, int]:
        """(node Leases, nodes still tainted not-ready: counted once every Lease is there)."""
        leases = len((await api.list_all(LEASES))["items"])
        if leases < total:
            return leases, 0
        nodes = (await api.list_all("/api/v1/nodes"))["items"]
        tainted = sum(
            1
            for node in nodes
            if any(taint.get("key") == NOT_READY_TAINT for taint in node["spec"].get("taints") or ())
        )
        return leases, tainted

    def waiting(found: tuple[int, int]) -> None:
        leases, tainted = found
        if leases < total:
            report(f"{leases:,}/{total:,} node leases held by KWOK")
        else:
            report(f"{total - tainted:,}/{total:,} nodes untainted by kube-controller-manager")

    await poll_until(
        counts,
        lambda found: found[0] >= total and not found[1],
        lambda found: (
            f"the cluster has not settled after {timeout:.0f}s: {found[0]:,}/{total:,} node leases, "
            f"{found[1]:,} nodes still tainted {NOT_READY_TAINT}"
        ),
        timeout,
        interval=3.0,
        waiting=waiting,
    )
