"""Growing the benchmark's cluster: thousands of KWOK nodes, Ready from the start.

`LocalCluster.add_nodes` creates nodes without status and lets KWOK initialise each
(conditions, addresses, phase): four at a time, a few per second on a busy 2-CPU
machine, so 5,000 nodes would take a quarter of an hour. The benchmark creates the same
nodes (`plan_nodes`) with the status KWOK would give them already set, so KWOK only has
to hold each node's Lease (its heartbeat), which it does quickly. Before measuring, we
wait until every node has its Lease, so the cluster has settled.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable
from typing import Any

from bench.loadclient import LoadClient
from secondary_scheduler.cluster.nodes import NodeShape, plan_nodes
from secondary_scheduler.kube.client import ApiClient, ApiError

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
_CONDITIONS = (
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("NetworkUnavailable", "False", "RouteCreated", "RouteController created a route"),
)


def ready_node_manifests(count: int, shape: NodeShape, zones: int, start: int) -> list[dict[str, Any]]:
    """`plan_nodes`' manifests, each with the conditions and phase KWOK's initialisation would set."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    manifests = plan_nodes(count, shape, zones, start=start)
    for manifest in manifests:
        status = manifest["status"]
        status["phase"] = "Running"
        status["conditions"] = [
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
    load: LoadClient,
    start: int,
    count: int,
    shape: NodeShape,
    zones: int,
    report: Callable[[str], None],
    concurrency: int = 32,
    timeout: float = 900.0,
) -> None:
    """Create nodes start..start+count-1 and wait until KWOK holds a Lease for every node."""
    manifests = ready_node_manifests(count, shape, zones, start)
    pending = iter(manifests)
    created = [0]

    async def worker() -> None:
        for manifest in pending:
            try:
                await load.create("/api/v1/nodes", manifest)
            except ApiError as error:
                if not error.conflict:
                    raise
            created[0] += 1
            if created[0] % 250 == 0:
                report(f"{created[0]:,}/{count:,} nodes created")

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    total = start + count
    deadline = time.monotonic() + timeout
    while True:
        leases = len((await api.list_all(LEASES))["items"])
        if leases >= total:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"KWOK holds leases for only {leases:,} of {total:,} nodes after {timeout:.0f}s"
            )
        report(f"{leases:,}/{total:,} node leases held by KWOK")
        await asyncio.sleep(2.0)
